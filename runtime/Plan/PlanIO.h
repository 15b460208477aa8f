//===- PlanIO.h - Reading and writing .folio artifacts ----------*- C++ -*-===//
//
// Layout (little-endian):
//   0   "FOLIOPLN"            magic
//   8   u32 version           kPlanVersion
//   12  u32 0                 reserved
//   16  u64 headerOffset      (64)
//   24  u64 headerBytes
//   32  u64 blobOffset        a multiple of 64; the blob runs to end of file
//   40  u64 fileBytes         the whole file
//   48  u64 metadataHash      planHash of bytes [0, blobOffset) with this
//                             field read as zero (so it covers the size
//                             and the weights' hash)
//   56  u64 weightsHash       planHash of the blob, [blobOffset, fileBytes)
//   64  header                tagged binary records (PlanIO.cpp), see
//                             docs/plan-and-executor.md
//   blobOffset: blob          weights and large constants, each 64-aligned
// Loading maps the file and points the plan's blob into the mapping, so
// weights are never copied (executors may still pack them). Reading checks
// the file size and both hashes before parsing (the weights' unless
// ReadPlanOptions::verifyWeights is off). A mapped file truncated while the
// plan lives ends the process with an error naming it, not a bare SIGBUS
// (PlanMapping.h).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_PLANIO_H
#define FOLIO_RUNTIME_PLAN_PLANIO_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>

namespace folio::plan {

inline constexpr uint32_t kPlanVersion = 9;
inline constexpr char kPlanMagic[9] = "FOLIOPLN";

/// The largest KV-cache geometry a plan may declare: heads and head_dim
/// each at most 4096, so a block of the widest dtype (4096 x 4096 x 256
/// tokens x 4 bytes = 2^34) is far from overflowing a size computation.
inline constexpr int64_t kMaxKVHeads = 4096;
inline constexpr int64_t kMaxHeadDim = 4096;
/// The longest int2 (KIVI) full-precision window: it lives outside the KV
/// block budget, so it must stay a small part of a context.
inline constexpr int64_t kMaxKiviResidual = 8192;

/// The largest tensor a plan may declare: rank 64 and 2^40 elements of its
/// static dims, the bounds the compiler puts on every node result
/// (compiler/ONNXOps/ValueFacts.h), so that no byte count computed from a
/// value's dims (or from a buffer's size times a step's token count)
/// overflows.
inline constexpr int64_t kMaxTensorRank = 64;
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

/// The values the config's `kv_cache_dtype` may take: folio::KVCacheDType
/// (compiler/Target/Target.h) from F32 = 1 to Int2 = 8, never Auto = 0
/// (the compiler records the dtype after resolving auto). PlanIOTest checks
/// that these match the enum.
inline constexpr int64_t kMinConfigKVCacheDType = 1;
inline constexpr int64_t kMaxConfigKVCacheDType = 8;

/// Byte offsets of the fixed header's fields that version 5 added.
inline constexpr uint64_t kFileBytesOffset = 40;
inline constexpr uint64_t kMetadataHashOffset = 48;
inline constexpr uint64_t kWeightsHashOffset = 56;

/// The checksum of both sections: XXH64 (xxHash's 64-bit hash, seed 0) of
/// `bytes` bytes at `data`, as the xxHash specification defines it, so the
/// same on every machine (little-endian reads).
uint64_t planHash(const void *data, uint64_t bytes);

struct ReadPlanOptions {
  /// Hash the weight blob and refuse a mismatch. Off trusts the weights
  /// (the file size and the metadata hash are still checked), saving one
  /// pass over the blob at load time.
  bool verifyWeights = true;
};

/// Writes `plan` to `path` (atomically: a temporary file renamed into place).
Status writePlan(const Plan &plan, const std::string &path);

/// Serialises to memory (the same bytes writePlan stores).
std::string serializePlan(const Plan &plan);

/// Maps and parses `path`; the file size, the metadata hash, the weights'
/// hash (see `options`) and every offset, id and size are checked.
Expected<Plan> readPlan(const std::string &path,
                        const ReadPlanOptions &options = {});

/// Maps and parses the artifact stored at bytes [offset, offset + bytes) of
/// `path` (a plan embedded in a larger file, such as a model binary);
/// `offset` must be a multiple of the page size. The same checks as
/// readPlan, with errors naming the path and the offset; the mapping is
/// guarded against truncation like readPlan's.
Expected<Plan> readPlanAt(const std::string &path, uint64_t offset,
                          uint64_t bytes, const ReadPlanOptions &options = {});

/// Parses an in-memory artifact, copying the blob (tests, embedded plans),
/// with the same checks as readPlan.
Expected<Plan> parsePlan(const std::string &bytes,
                         const ReadPlanOptions &options = {});

/// Checks ids, constant ranges, op and kernel kinds, KV-cache geometry and
/// dtypes with their scale layouts (and the static scales their steps take,
/// the same for every step of a cache), the config's kv_cache_dtype, that
/// the kernels cover the steps in order, against the value table, the
/// verify entries (validateEntries, runtime/Plan/VerifyEntries.h), the
/// stored weights (validateStoredWeights, runtime/Plan/VerifyWeights.h) and
/// the device kernels with their checksums (validateDeviceKernels,
/// runtime/Plan/VerifyDeviceKernels.h).
Status validatePlan(const Plan &plan);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_PLANIO_H
