//===- KernelSpec.h - Specialization parameters of CUDA kernels -*- C++ -*-===//
//
// Each generated kernel is fixed by a spec: every parameter the code is
// specialized on. A spec names its kernel (the entry point) and its
// canonical key (every parameter plus a hash of the templates), and gives
// the launch geometry for a problem size. Checks say what is wrong and
// what is supported instead.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_KERNELSPEC_H
#define FOLIO_CODEGEN_CUDA_KERNELSPEC_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace folio::cuda {

/// The GPU architectures kernels are compiled for (NVRTC names).
const std::vector<std::string> &supportedArchs();
/// True if `arch` is one of supportedArchs().
bool isSupportedArch(const std::string &arch);

/// Cache types the CUDA kernels read and write: all of the CPU path's but
/// int2 (KIVI).
bool isSupportedCacheType(cpu::DType t);
/// "f32, bf16, ..." for diagnostics.
std::string supportedCacheTypeList();

/// kv_write for one layer's cache: K and V rows of numKvHeads heads.
struct KVWriteSpec {
  cpu::DType cacheType = cpu::DType::F32;
  int headDim = 0;
  int numKvHeads = 0;
  /// int8 / int4: elements per {scale, min} group; 0 for the other types.
  int group = 0;
};

/// Paged decode attention (and its split-K combine).
struct PagedDecodeSpec {
  cpu::DType cacheType = cpu::DType::F32;
  int headDim = 0;
  int blockSize = 0;
  int numKvHeads = 0;
  /// Query heads per kv head (GQA; 1 for multi-head attention).
  int queriesPerKv = 1;
  int group = 0;
  /// Keys per partition: one block's share of a long context.
  int partition = 256;
  int threads = 128;
};

/// Grid, block and dynamic shared memory of one launch.
struct LaunchGeometry {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t dynamicShared = 0;
};

cpu::Status validate(const KVWriteSpec &spec);
cpu::Status validate(const PagedDecodeSpec &spec);

std::string kernelName(const KVWriteSpec &spec);
std::string kernelName(const PagedDecodeSpec &spec);
std::string combineKernelName(const PagedDecodeSpec &spec);
/// "kv_write:cache=int8;head_dim=128;...;templates=<hash>".
std::string canonicalKey(const KVWriteSpec &spec);
std::string canonicalKey(const PagedDecodeSpec &spec);

/// One block per (token, kv head), one warp each.
LaunchGeometry kvWriteLaunch(const KVWriteSpec &spec, int64_t numTokens);

/// Launches of one decode step: numPartitions = ceil(maxContext /
/// partition); with more than one, the main kernel writes partial results
/// (workspace floats: partialFloats + 2 * statFloats) and the combine
/// kernel merges them.
struct PagedDecodeLaunch {
  LaunchGeometry main, combine;
  int numPartitions = 1;
  size_t partialFloats = 0; ///< [tokens, heads, partitions, headDim]
  size_t statFloats = 0;    ///< [tokens, heads, partitions], max and sum each
};
PagedDecodeLaunch pagedDecodeLaunch(const PagedDecodeSpec &spec,
                                    int64_t numTokens, int64_t maxContext);

/// Dynamic shared memory of the main decode kernel.
size_t pagedDecodeSharedBytes(const PagedDecodeSpec &spec);

/// The most dynamic shared memory a kernel takes without opting in (every
/// supported arch).
constexpr size_t kMaxDefaultSharedBytes = 48 * 1024;

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_KERNELSPEC_H
