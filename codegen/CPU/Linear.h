//===- Linear.h - y = x W^T + b with weights packed at load -----*- C++ -*-===//
//
// Weights keep the PyTorch/ONNX-Gemm layout W[N, K] (row n = output n),
// stored f32, bf16, f16, int8, fp8_e4m3 or int4 (WeightPack.h); all but
// f32 and bf16 run their register-converting kernels at every M. For f32 and
// bf16 that one copy serves both paths:
//  - M <= kSmallM rows (decode, speculative verify): a hand-written GEMV
//    that streams W once at memory bandwidth, M rows at a time, threads
//    splitting N;
//  - larger M (prefill): oneDNN matmul (AMX / AVX-512). For K < 2048 the
//    weights are also reordered once, at pack, into the layout oneDNN's
//    brgemm picks (a second copy: those weights take twice the memory) and
//    run with fixed-M primitives per M bucket; otherwise (and as fallback)
//    a runtime-M primitive reads the [N, K] buffer as K x N in `ba` order.
//    See DnnlMatmul.h.
// Without oneDNN, or if its primitive cannot be created, the GEMV kernel
// handles every M.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_LINEAR_H
#define FOLIO_CODEGEN_CPU_LINEAR_H

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"
#include "codegen/CPU/WeightPack.h"

#include <cstdint>
#include <memory>

namespace folio::cpu {

/// Rows up to which linear() uses the GEMV kernel even when oneDNN is there.
/// Decode has one row per sequence; a speculative verify step has k + 1
/// per sequence. The GEMV's wide tile reads each weight once for up to
/// eight rows, and each row's result is bitwise what a one-row call gives
/// (the same sums in the same order), so at k <= 7 a verify step's linears
/// give each row what plain decoding gives, and do not move a greedy near
/// tie; oneDNN rounds x to bf16 for bf16 weights, so its rows differ.
/// Speed: where decode streams the weights (the bundled target in f32,
/// docs/speculative-decoding.md) a verify forward at 7 rows costs 1.2-1.35x a
/// decode forward; on the 110M Llama in bf16, 2 threads, where 8 rows make
/// the GEMV compute-bound, folio-linear-bench 7 2 verify has the GEMV at
/// 1.60-1.83x M = 1 against oneDNN's 1.40-1.64x at M = 8.
constexpr int64_t kSmallM = 8;

/// One linear layer's weights (and bias), prepared once at load.
class PackedWeight {
public:
  PackedWeight();
  ~PackedWeight();
  PackedWeight(PackedWeight &&) noexcept;
  PackedWeight &operator=(PackedWeight &&) noexcept;

  /// Packs W[n, k] of `srcType` into `storage` (F32, BF16 or I8; f16 weights
  /// must become bf16 or f32 because oneDNN 2.6 has no f16 matmul; I8 goes
  /// through packWeightRows, WeightPack.h). bias is [n]
  /// or null. With `borrow`, when no conversion is needed the weight keeps
  /// pointing at `data` (an mmap-ed artifact, say), which must outlive it.
  /// `gatedHalves`: W is gate and up stacked ([2F, K]); gatedLinear can
  /// then fuse the activation into oneDNN's tiles.
  static Status pack(const void *data, DType srcType, int64_t n, int64_t k,
                     const float *bias, DType storage, PackedWeight &out,
                     bool borrow = false, bool gatedHalves = false);

  /// Points at weights already packed (a plan's blob, say), which must
  /// outlive the result: nothing is converted or copied here; oneDNN's
  /// prefill primitive (and its blocked copy, f32/bf16 with K < 2048) is
  /// made at the first linear() with M > kSmallM. bias is [n] or null
  /// (copied: it is small); `gatedHalves` as for pack.
  static Status fromView(const WeightView &view, const float *bias,
                         PackedWeight &out, bool gatedHalves = false);

  int64_t outFeatures() const;
  int64_t inFeatures() const;
  DType storage() const;
  const void *data() const;
  const float *bias() const; ///< null when there is none
  /// The packed form the kernels read (int8 scales and outliers included).
  const WeightView &view() const;
  /// Whether rows beyond kSmallM go through oneDNN.
  bool usesDnnl() const;
  /// Bytes of weight streamed per GEMV (what a decode step must read).
  size_t weightBytes() const;

  struct Impl;

private:
  /// Copies the bias and creates the oneDNN primitive where it applies
  /// (`lazy`: at its first use).
  static void finish(Impl &impl, const float *bias, bool gatedHalves,
                     bool lazy);
  std::unique_ptr<Impl> impl;
  friend Status linear(const float *, int64_t, const PackedWeight &, float *,
                       ThreadPool &);
  friend Status linearGemv(const float *, int64_t, const PackedWeight &,
                           float *, ThreadPool &);
  friend Status gatedLinear(const float *, int64_t, const PackedWeight &,
                            Activation, float *, ThreadPool &);
};

/// y[numTokens, N] = x[numTokens, K] . W^T + bias, dispatching on numTokens
/// as described above. x and y must not overlap.
Status linear(const float *x, int64_t numTokens, const PackedWeight &w,
              float *y, ThreadPool &pool = ThreadPool::global());

/// h[numTokens, F] = act(x . W_gate^T) * (x . W_up^T) for gate and up
/// stacked into one [2F, K] weight (packed with gatedHalves, no bias). On
/// oneDNN's tiles (numTokens > kSmallM) each tile multiplies a gate slice
/// and its up slice and writes their activation straight into h, so the
/// [numTokens, 2F] product never goes through memory; otherwise linear()
/// into a scratch, then gatedActivation. x and h must not overlap.
Status gatedLinear(const float *x, int64_t numTokens,
                   const PackedWeight &gateUp, Activation act, float *h,
                   ThreadPool &pool = ThreadPool::global());

/// The GEMV path for any numTokens (tests and benchmarks call it directly).
Status linearGemv(const float *x, int64_t numTokens, const PackedWeight &w,
                  float *y, ThreadPool &pool = ThreadPool::global());

/// Sets the OpenMP team size for oneDNN calls made on the calling thread (an
/// OpenMP setting is per thread). Folio's own matmuls set 1 on every thread
/// that runs them (DnnlMatmul.cpp); benchmarks that call oneDNN directly
/// (the GEMM-peak probe) set their own. Returns false when no OpenMP
/// runtime is loaded (no oneDNN), where there is nothing to size.
bool setLibraryThreads(int numThreads);

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_LINEAR_H
