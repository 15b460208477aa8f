//===- GpuBench.h - Generated kernels measured on one GPU -------*- C++ -*-===//
//
// What tools/gpu-check.sh reports, as a library so that the device tests
// run the same code on the fake driver (host emulation) at small sizes:
// the device-to-device copy bandwidth, and the paged decode attention and
// linear kernels' bandwidth as fractions of it. Each measurement first
// checks the kernel's result against the CPU kernel on the same inputs, so
// a number never comes from a wrong kernel.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_GPU_BENCH_GPUBENCH_H
#define FOLIO_TOOLS_FOLIO_GPU_BENCH_GPUBENCH_H

#include "codegen/CPU/WeightPack.h"
#include "codegen/CUDA/Emitter.h"
#include "codegen/CUDA/KernelSpec.h"
#include "runtime/Device/CublasLt.h"
#include "runtime/Device/CudaDevice.h"

#include <map>
#include <string>
#include <vector>

namespace folio_cuda {
struct LinearArgs;
} // namespace folio_cuda

namespace folio::gpubench {

/// Generated kernels compiled by NVRTC for one device and loaded.
struct LoadedKernels {
  device::CudaModule module;
  std::map<std::string, device::CudaKernel> byName;
  std::string arch;     ///< what NVRTC compiled for
  bool fromPtx = false; ///< the driver JIT-compiled the PTX
};

/// A launch of the geometry a spec gives (KernelSpec.h).
device::CudaLaunch toLaunch(const cuda::LaunchGeometry &g);

/// Compiles `kernels` as one module for `dev` (cuda::deviceTarget) and
/// resolves each entry point.
Status loadKernels(const device::CudaDevice &dev,
                   const std::vector<cuda::GeneratedKernel> &kernels,
                   LoadedKernels &out);

struct Timing {
  double ms = 0;     ///< median of the timed runs, per run
  double bytes = 0;  ///< moved per run (read + written)
  double gbPerS = 0; ///< bytes / ms
  int runs = 0;      ///< timings taken
};

/// cuMemcpyDtoD of `bytes`: 2 * bytes moved per run.
Expected<Timing> measureCopy(const device::CudaDevice &dev, size_t bytes,
                             int runs);

struct DecodeCase {
  cuda::PagedDecodeSpec spec;
  int seqs = 1;    ///< one decode token each
  int context = 1; ///< keys per sequence
  /// The same attention with other launch parameters (threads,
  /// partition): each checked and timed on the same inputs, for tuning.
  std::vector<cuda::PagedDecodeSpec> alternatives;
};

struct DecodeResult {
  Timing timing;
  int partitions = 1;
  /// Largest |device - CPU pagedAttention| over |CPU| + 1.
  double maxRelDiff = 0;
  struct Alternative {
    cuda::PagedDecodeSpec spec;
    Timing timing;
    int partitions = 1;
    double maxRelDiff = 0;
  };
  std::vector<Alternative> alternatives; ///< DecodeCase::alternatives'
};

/// Random K and V written by the CPU kvWrite, one query token per sequence,
/// blocks shuffled; the main kernel and, with several partitions, the
/// combine. Bytes: the K and V rows and params read, q and out.
Expected<DecodeResult> measurePagedDecode(const device::CudaDevice &dev,
                                          const LoadedKernels &kernels,
                                          const DecodeCase &c, int runs,
                                          uint32_t seed = 1);

/// Paged decode attention's bandwidth target, as a fraction of the copy's.
constexpr double kDecodeBandwidthTarget = 0.8;

/// The GPU targets the decode measurements answer: paged decode attention
/// at kDecodeBandwidthTarget of the copy's bandwidth for every cache dtype
/// and shape, and an fp8_e4m3 cache within 5 % of bf16's time at the
/// shortest context measured and faster at the longest.
struct DecodeTargets {
  double minFractionOfCopy = 0; ///< over every measured run
  std::string slowest;          ///< "int4 at 16 x 8192", say
  double fp8OverBf16Short = 0;  ///< fp8 time / bf16 time
  double fp8OverBf16Long = 0;
  bool bandwidthMet = false, fp8Met = false;
};

/// The targets from decode runs (any order; fp8 and bf16 runs matched by
/// context, one run of each per context). An error if the shortest or the
/// longest context lacks its bf16 or fp8 run.
Expected<DecodeTargets>
decodeTargets(const std::vector<std::pair<DecodeCase, DecodeResult>> &runs,
              double copyGbPerS);

struct PrefillCase {
  cuda::PagedPrefillSpec spec;
  int seqs = 1;
  int context = 1; ///< keys per sequence, its new tokens included
  int queries = 1; ///< new tokens per sequence (the last of its keys)
};

struct PrefillResult {
  Timing timing;
  double flops = 0; ///< q.k and p.v over the keys each token sees
  double tflopsPerS = 0;
  double maxRelDiff = 0;
};

/// A prompt (queries == context) or a chunk after cached context per
/// sequence, causal; bytes as for decode.
Expected<PrefillResult> measurePagedPrefill(const device::CudaDevice &dev,
                                            const LoadedKernels &kernels,
                                            const PrefillCase &c, int runs,
                                            uint32_t seed = 1);

struct KVWriteCase {
  cuda::KVWriteSpec spec;
  int tokens = 1;
};

struct KVWriteResult {
  Timing timing;
};

/// Random f32 K and V rows of `tokens` tokens to shuffled slots; the pools
/// and params must be bit for bit what the CPU kvWrite writes. Bytes: the
/// rows read, the slot mapping, the rows and params written.
Expected<KVWriteResult> measureKVWrite(const device::CudaDevice &dev,
                                       const LoadedKernels &kernels,
                                       const KVWriteCase &c, int runs,
                                       uint32_t seed = 1);

struct LinearCase {
  cuda::LinearSpec spec;
  int n = 1;
  int m = 1;
  /// The same linear with other launch parameters (threads, rows per
  /// pass, outputs per warp): each checked and timed on the same weights.
  std::vector<cuda::LinearSpec> alternatives;
};

struct LinearResult {
  Timing timing;
  /// Largest |device - CPU linear| over the rounding bound of its sum
  /// (outputs checked: the first 512 of each row).
  double maxBoundFraction = 0;
  struct Alternative {
    cuda::LinearSpec spec;
    Timing timing;
    double maxBoundFraction = 0;
  };
  std::vector<Alternative> alternatives; ///< LinearCase::alternatives'
};

/// A weight packed as folioc stores it (codegen/CPU/WeightPack.h), and its
/// bytes on the device.
struct DeviceWeight {
  cpu::WeightPacking packed;
  device::DeviceBuffer data, scales, groupParams, outlierCols, outliers;
};

/// Packs `w` ([n, k] f32) as `type` (int4 in groups of `groupSize`) and
/// uploads the packing.
Expected<DeviceWeight> uploadWeight(const device::CudaDevice &dev,
                                    const std::vector<float> &w, int64_t n,
                                    int64_t k, cpu::DType type, int groupSize);

/// Points the weight fields of `a` (w, scales, int4 params, outliers) at
/// `w`'s device bytes.
void bindWeight(const DeviceWeight &w, folio_cuda::LinearArgs &a);

/// Random weights packed as the plan stores them, checked against the CPU
/// linear on the first 512 outputs of every row; bytes: the packed
/// weights (scales and outliers included), x and y. A dequantizing spec
/// (LinearSpec::dequantToBf16) is checked element for element against the
/// CPU's weight values in bf16 instead (m unused; bytes: the packed
/// weights and the bf16 rows).
Expected<LinearResult> measureLinear(const device::CudaDevice &dev,
                                     const LoadedKernels &kernels,
                                     const LinearCase &c, int runs,
                                     uint32_t seed = 1);

struct GemmResult {
  Timing timing;
  double tflopsPerS = 0;
  /// Largest |device - reference| over the rounding bound of its sum.
  double maxBoundFraction = 0;
};

/// cuBLASLt's bf16 linear (CublasLt::linearBf16) of m rows through an
/// [n, k] weight, with a bias, checked against a double-precision sum over
/// the same bf16 values on the first 256 outputs of the first 64 rows. Bytes:
/// the weights, x, bias and y; TFLOP/s: 2 m n k over the time.
Expected<GemmResult> measureCublasLinear(const device::CudaDevice &dev,
                                         const device::CublasLt &lt, int m,
                                         int n, int k, int runs,
                                         uint32_t seed = 1);

/// cuBLASLt's row-scaled fp8 linear (CublasLt::linearFp8) of m rows of e4m3
/// x through an [n, k] e4m3 weight, checked the same way against a double
/// sum of the codes' values times both scales (bound: 2^-9 of the sum of
/// |products|, as fp8 tensor cores may accumulate in less than f32). A
/// NotFound error where the library or device has no such GEMM. Bytes: the
/// codes, the scales and y.
Expected<GemmResult> measureCublasLinearFp8(const device::CudaDevice &dev,
                                            const device::CublasLt &lt, int m,
                                            int n, int k, int runs,
                                            uint32_t seed = 1);

struct RowCase {
  cuda::RowKernelSpec spec;
  int rows = 1;
};

struct RowResult {
  Timing timing;
  /// Largest |device - reference| / (|reference| + 1) over the outputs.
  double maxRelDiff = 0;
};

/// A row program (norms, residual adds, activations) on random rows,
/// checked against the program evaluated in double on the host
/// (evaluateRowProgram). Bytes: the inputs read and the outputs written.
Expected<RowResult> measureRowKernel(const device::CudaDevice &dev,
                                     const LoadedKernels &kernels,
                                     const RowCase &c, int runs,
                                     uint32_t seed = 1);

/// The outputs of `spec`'s program over `rows` rows in double precision,
/// each elementwise op's result rounded to f32 as the CPU executor stores
/// it (norms sum in double): the reference for any program the expression
/// emitter takes. `inputs`
/// holds each input's values (Row inputs [rows, dim] dense, Vector [dim],
/// Scalar [1]); the result holds each output's [rows, dim].
std::vector<std::vector<double>>
evaluateRowProgram(const cuda::RowKernelSpec &spec,
                   const std::vector<std::vector<float>> &inputs, int64_t rows);

struct RotaryCase {
  cuda::RotarySpec spec;
  int tokens = 1;
};

/// Rotary in place on [tokens, heads, head_dim] rows at random positions
/// of a 4096-position table, checked against the CPU applyRotaryRows
/// (within 1e-6). Bytes: the rows read and written, positions and the
/// table rows.
Expected<Timing> measureRotary(const device::CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const RotaryCase &c, int runs,
                               uint32_t seed = 1);

struct GatherCase {
  cuda::GatherSpec spec;
  int rows = 1;
  int tableRows = 1;
};

/// Embedding (or gather_rows) of random ids, bit for bit the CPU
/// embedding's (embeddingRows' for a packed table, gatherRows'). Bytes: the
/// rows read (a packed row's share of codes and params) and written, the
/// ids.
Expected<Timing> measureGather(const device::CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const GatherCase &c, int runs,
                               uint32_t seed = 1);

struct SampleCase {
  cuda::SampleSpec spec;
  int rows = 1;
  int vocab = 1;
  /// The logprobs kernel only: read the keep sets the draw kernel (of the
  /// same block size) recorded, as the executor runs it, instead of
  /// rebuilding them.
  bool afterDraw = false;
};

/// Greedy or top-k / top-p sampling of random logits rows (mixed
/// temperatures, top_k and top_p), each token the runtime Sampler's exact
/// choice. Bytes: the logits read. For the penalties kernel: random
/// histories, each row bit for bit applyPenalties' rounded to float;
/// bytes: the entries and the logits they touch. For the logprobs kernel:
/// each row's logprobs the CPU sampler's for its draw.
Expected<Timing> measureSample(const device::CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const SampleCase &c, int runs,
                               uint32_t seed = 1);

struct VerifyCase {
  cuda::SampleSpec spec; ///< a verifier (spec.verify)
  int seqs = 1;
  int drafts = 4; ///< K: sequences have 0 to K drafts
  int vocab = 1;
  /// The sampled sequences' drafts come with a draft model's
  /// distributions (rows on the device), not one-hot.
  bool draftProbs = false;
};

/// Verification of drafts over random rows (greedy and sampled settings
/// in one launch, drafts the row's argmax or random; one-hot, or with a
/// draft model's distributions: softmaxes of nearby rows), each
/// sequence's outcome the engine's host path's
/// (core::verifySpeculativeOnCpu). Bytes: the logits rows read once.
Expected<Timing> measureVerify(const device::CudaDevice &dev,
                               const LoadedKernels &kernels,
                               const VerifyCase &c, int runs,
                               uint32_t seed = 1);

struct CastCase {
  cuda::CastSpec spec;
  int n = 1;
};

/// A cast of n random elements (integers beyond i32's range, negative
/// ones; floats with infinities, NaNs and rounding ties), each what the
/// CPU executor's cast gives: bit for bit, NaN for NaN. Bytes: read and
/// written.
Expected<Timing> measureCast(const device::CudaDevice &dev,
                             const LoadedKernels &kernels, const CastCase &c,
                             int runs, uint32_t seed = 1);

} // namespace folio::gpubench

#endif // FOLIO_TOOLS_FOLIO_GPU_BENCH_GPUBENCH_H
