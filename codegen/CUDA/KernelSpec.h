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
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/Status.h"
#include "codegen/CUDA/RowProgram.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace folio::cuda {

/// The GPU architectures kernels are compiled for (NVRTC names).
const std::vector<std::string> &supportedArchs();
/// True if `arch` is one of supportedArchs().
bool isSupportedArch(const std::string &arch);

/// What to compile for a device of compute capability major.minor: the
/// supported arch whose cubin runs there (`cubinRuns`), or, for a device
/// no cubin fits (sm_100, sm_120, ...), the newest arch-neutral one at most
/// the device's, whose PTX the driver JIT-compiles. Empty below sm_80.
struct DeviceTarget {
  std::string arch;
  bool cubinRuns = false;
};
DeviceTarget deviceTarget(int major, int minor);

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

/// Paged attention for prefill and mixed batches: a block takes a tile of
/// one sequence's query tokens for all query heads of one kv head, and
/// walks the visible keys in shared-memory tiles with an online softmax.
/// Two kernels: f32 products on CUDA cores, or (`tensorCores`) q, K, V and
/// the probabilities rounded to bf16 and multiplied on tensor cores with
/// f32 accumulation (mma.sync m16n8k16, sm_80 and later), each warp taking
/// 16 query rows.
struct PagedPrefillSpec {
  cpu::DType cacheType = cpu::DType::F32;
  int headDim = 0;
  int blockSize = 0;
  int numKvHeads = 0;
  int queriesPerKv = 1;
  int group = 0;
  /// Query tokens per block (each with queriesPerKv heads).
  int queryTile = 16;
  /// Keys per shared-memory tile.
  int keyTile = 32;
  int threads = 128;
  /// bf16 products on tensor cores: head_dim and the key tile multiples of
  /// 16, and one warp per 16 rows (query tokens x queriesPerKv, rounded
  /// up).
  bool tensorCores = false;
};

/// A fused row kernel: one block per row of `dim` elements, the program
/// (RowProgram.h) run over it. `label` names it for readers (the plan's
/// kernel kind, say); the program itself is part of name and key.
struct RowKernelSpec {
  std::string label = "row";
  int dim = 0;
  int threads = 128;
  std::vector<RowInputKind> inputs;
  int numOutputs = 0;
  std::vector<RowOp> ops;
};

/// Rotary position embedding of [tokens, heads, headDim] rows, in place or
/// into a second buffer, with angles from a cos / sin table.
struct RotarySpec {
  int headDim = 0;
  int rotaryDim = 0;
  bool interleaved = false; ///< pairs (2i, 2i+1); else (i, i + rotaryDim/2)
  int numHeads = 0;
};

/// Embedding lookup (rows of a [vocab, dim] table in f32, bf16 or f16,
/// times a scale) and gather_rows (f32 rows by index).
struct GatherSpec {
  bool embedding = false;
  /// f32, bf16 or f16 rows; an embedding also reads a tied lm_head's
  /// packing (int8 with row scales and outlier columns, fp8_e4m3 with row
  /// scales, int4 groups: codegen/CPU/WeightPack.h).
  cpu::DType tableType = cpu::DType::F32;
  int dim = 0;
  int threads = 128;
  /// int4 tables: weights per (scale, min) group (32, 64, 128); else 0.
  int groupSize = 0;
};

/// What a sampling kernel does over logits rows, one block per row (per
/// sequence for Verify).
enum class SampleMode {
  /// The argmax.
  Greedy,
  /// Temperature, min-p, top-k and top-p, then an inverse-CDF draw with
  /// the caller's uniform; rows of temperature 0 greedy.
  Draw,
  /// The speculative verification of drafts (one-hot, or a draft model's
  /// distributions) with Draw's processing.
  Verify,
  /// The repetition, frequency and presence penalties applied to the rows
  /// in place before a draw.
  Penalize,
  /// After a draw, the drawn token's logprob and the most likely tokens'
  /// under the distribution it was drawn from.
  Logprobs,
};
/// How many SampleModes there are (Logprobs is the last).
inline constexpr size_t kNumSampleModes = size_t(SampleMode::Logprobs) + 1;

struct SampleSpec {
  SampleMode mode = SampleMode::Greedy;
  int threads = 256;
};

/// Linear over a plan's stored weights (codegen/CPU/WeightPack.h):
/// y[m, n] = x[m, k] . W[n, k]^T + bias, one warp per outputsPerWarp output
/// rows streaming their weights once per pass of up to rowsPerPass token
/// rows (decode and speculative verification).
struct LinearSpec {
  /// F32, BF16, F16, I8 (with outlier columns), FP8E4M3 or I4.
  cpu::DType weightType = cpu::DType::BF16;
  int k = 0;
  /// int4's weights per (scale, min) group: 32, 64 or 128; 0 otherwise.
  int groupSize = 0;
  /// Token rows that share one read of the weights: the CPU GEMV's
  /// kSmallM, a decode or verify batch.
  int rowsPerPass = int(cpu::kSmallM);
  int threads = 128;
  /// Output rows (n) one warp computes: each x element it reads serves
  /// them all.
  int outputsPerWarp = 2;
  /// Instead of the product, the weight dequantized to bf16 rows [n, k]
  /// (int8 and fp8_e4m3 codes times their row's scale with the outlier
  /// columns' own values, int4 min + q * scale of its group), rounded to
  /// nearest even: what cuBLASLt's bf16 GEMM reads for a batch of many
  /// rows of 8- and 4-bit weights. One block per weight row; rowsPerPass
  /// and outputsPerWarp play no part.
  bool dequantToBf16 = false;
  /// Instead of the product, x's rows quantized to fp8 e4m3 for cuBLASLt's
  /// fp8 GEMM of fp8_e4m3 weights: each row's scale is its largest |x| /
  /// 448 (1 for a row of zeros), its codes x / scale rounded to nearest
  /// even. One block per x row; the weight plays no part.
  bool quantizeXToFp8 = false;
};

/// Element types a cast kernel takes.
enum class CastType { F32, F16, BF16, I32, I64 };
const char *castTypeName(CastType t);

/// The CPU executor's `cast` step: within integers or within floats.
struct CastSpec {
  CastType from = CastType::I32;
  CastType to = CastType::I64;
  int threads = 256;
};

/// The combine kernel that merges a split-K decode's partitions.
struct PagedDecodeCombineSpec {
  PagedDecodeSpec decode;
};

/// The spec of any generated kernel: what a caller needs to launch it
/// (its geometry) besides its name.
using AnyKernelSpec =
    std::variant<KVWriteSpec, PagedDecodeSpec, PagedDecodeCombineSpec,
                 PagedPrefillSpec, RowKernelSpec, RotarySpec, GatherSpec,
                 SampleSpec, LinearSpec, CastSpec>;

/// Grid, block and dynamic shared memory of one launch.
struct LaunchGeometry {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t dynamicShared = 0;
};

cpu::Status validate(const KVWriteSpec &spec);
cpu::Status validate(const PagedDecodeSpec &spec);
cpu::Status validate(const PagedPrefillSpec &spec);
cpu::Status validate(const RowKernelSpec &spec);
cpu::Status validate(const RotarySpec &spec);
cpu::Status validate(const GatherSpec &spec);
cpu::Status validate(const SampleSpec &spec);
cpu::Status validate(const LinearSpec &spec);
cpu::Status validate(const CastSpec &spec);

std::string kernelName(const KVWriteSpec &spec);
std::string kernelName(const PagedDecodeSpec &spec);
std::string combineKernelName(const PagedDecodeSpec &spec);
std::string kernelName(const PagedPrefillSpec &spec);
std::string kernelName(const RowKernelSpec &spec);
std::string kernelName(const RotarySpec &spec);
std::string kernelName(const GatherSpec &spec);
std::string kernelName(const SampleSpec &spec);
std::string kernelName(const LinearSpec &spec);
std::string kernelName(const CastSpec &spec);
/// "kv_write:cache=int8;head_dim=128;...;templates=<hash>".
std::string canonicalKey(const KVWriteSpec &spec);
std::string canonicalKey(const PagedDecodeSpec &spec);
std::string canonicalKey(const PagedPrefillSpec &spec);
std::string canonicalKey(const RowKernelSpec &spec);
std::string canonicalKey(const RotarySpec &spec);
std::string canonicalKey(const GatherSpec &spec);
std::string canonicalKey(const SampleSpec &spec);
std::string canonicalKey(const LinearSpec &spec);
std::string canonicalKey(const CastSpec &spec);
/// The hash of every template (16 hex digits) that ends each canonical key
/// as "templates=<hash>": kernels whose keys carry another hash were
/// generated from other templates, whose argument structures may differ.
std::string templatesHash();
/// The program of a row kernel as canonical text ("in0=row;v0=in(0);...").
std::string canonicalProgram(const RowKernelSpec &spec);

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

/// Grid (kv heads, ceil(maxQueryLen / queryTile), sequences); blocks past
/// their sequence's query tokens exit at once.
LaunchGeometry pagedPrefillLaunch(const PagedPrefillSpec &spec, int64_t numSeqs,
                                  int64_t maxQueryLen);
/// Dynamic shared memory of the prefill kernel: q, K and V tiles, scores
/// and row statistics (CUDA cores); the bf16 q or K tile, V transposed and
/// the slots (tensor cores).
size_t pagedPrefillSharedBytes(const PagedPrefillSpec &spec);
/// The prefill spec for a cache layout: about 64 query rows per block and
/// the largest key tile that fits the default shared memory (and, on
/// tensor cores, the registers), halving the query tile while none does.
/// `tensorCores` asks for the tensor-core kernel; where it cannot take the
/// shape (head_dim not a multiple of 16) the result is the CUDA-core spec
/// (its `tensorCores` says which). Where not even one query token fits
/// (head dims near 512 with many query heads per kv head) the result fails
/// validate(), and the decode kernel serves every batch.
PagedPrefillSpec defaultPagedPrefillSpec(cpu::DType cacheType, int headDim,
                                         int blockSize, int numKvHeads,
                                         int queriesPerKv, int group,
                                         bool tensorCores = false);

/// One block per row (rows, tokens, or indices).
LaunchGeometry rowKernelLaunch(const RowKernelSpec &spec, int64_t rows);
/// Grid (tokens, heads), block headDim / 2 rounded up to a warp.
LaunchGeometry rotaryLaunch(const RotarySpec &spec, int64_t numTokens);
LaunchGeometry gatherLaunch(const GatherSpec &spec, int64_t numRows);
/// One block per row, or per sequence for verification (numRows = S).
LaunchGeometry sampleLaunch(const SampleSpec &spec, int64_t numRows);
/// Grid ceil(n / warps per block), one warp per output row; one block per
/// weight row (dequantToBf16) or per x row (quantizeXToFp8: `n` is m).
LaunchGeometry linearLaunch(const LinearSpec &spec, int64_t n);
/// One thread per element.
LaunchGeometry castLaunch(const CastSpec &spec, int64_t n);

/// The most dynamic shared memory a kernel takes without opting in (every
/// supported arch).
constexpr size_t kMaxDefaultSharedBytes = 48 * 1024;

/// The registers per thread the tensor-core prefill kernel may give its
/// arrays (q fragments, output, scores), leaving the rest of the 255 to
/// addresses and row statistics: head_dim 256 fits with key tiles of 16.
constexpr int kMaxPrefillMmaRegisters = 200;

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_KERNELSPEC_H
