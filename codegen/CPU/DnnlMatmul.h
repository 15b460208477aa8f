//===- DnnlMatmul.h - oneDNN matmul over a packed weight --------*- C++ -*-===//
//
// Internal; compiled only with FOLIO_ENABLE_DNNL. Keeps oneDNN's headers out of
// every other translation unit.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_DNNLMATMUL_H
#define FOLIO_CODEGEN_CPU_DNNLMATMUL_H

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>
#include <memory>
#include <string>

namespace folio::cpu::detail {

/// oneDNN matmul over one weight. oneDNN 2.6 serves a runtime-M matmul only
/// with gemm:jit over the `ba` view of W[N, K]; brgemm (AMX / AVX-512),
/// 2-3x faster for prefill, needs a fixed M and its own weights layout. So
/// the weights are cut into column slices (about eight, or about eight per
/// half with `halves`; a function of N only), each reordered once into
/// brgemm's layout (a second copy next to the [N, K] one the GEMV streams).
/// run() multiplies every slice by row blocks of 256 input rows, each tile a
/// single-threaded fixed-M primitive on the pool (the last block's rows
/// padded to a bucket: M rounded up to 16 or 64), primitives made lazily
/// and cached; the runtime-M primitive over the borrowed slice is the
/// fallback. FOLIO_DNNL_WEIGHTS=ba turns the blocked copy off. The weight
/// buffer is borrowed and must outlive this object. Every thread that
/// creates or runs a primitive sets its OpenMP team size to 1 (an OpenMP
/// setting is per thread, so it stays so on the caller's thread).
class DnnlMatmul {
public:
  /// Null (with `why` set) if oneDNN cannot build the primitive here.
  /// With `halves` (a stacked gate/up weight, N even) each half is sliced
  /// alike, so runGated can pair a gate slice with its up slice.
  static std::unique_ptr<DnnlMatmul> create(const void *w, DType storage,
                                            int64_t n, int64_t k,
                                            const float *bias, bool halves,
                                            std::string &why);
  ~DnnlMatmul();

  /// y[m, n] = x[m, :] . W^T + bias. bf16 weights take x rounded to bf16
  /// (converted here on the pool), f32 weights take x as is. The slices run
  /// on `pool`; results do not depend on its size.
  Status run(const float *x, int64_t m, float *y, ThreadPool &pool) const;

  /// Whether runGated can run: halves, no bias, brgemm for every slice.
  bool gatedReady() const;
  /// h[m, N/2] = act(x W_gate^T) * (x W_up^T) for a weight created with
  /// `halves`, without materialising the [m, N] product: each tile runs a
  /// gate slice and its up slice and writes their columns of h. Fails
  /// (nothing written) where gatedReady() is false or brgemm has no
  /// primitive for this M; the caller then runs run() and the activation.
  Status runGated(const float *x, int64_t m, Activation act, float *h,
                  ThreadPool &pool) const;

  /// Bytes of the blocked copy (0 when there is none).
  size_t extraWeightBytes() const;

  struct State;
  struct Tiles;

private:
  explicit DnnlMatmul(std::unique_ptr<State> s);
  std::unique_ptr<State> state;
};

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_DNNLMATMUL_H
