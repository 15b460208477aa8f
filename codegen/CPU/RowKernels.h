//===- RowKernels.h - Per-ISA row loops of the elementwise kernels -*- C++ -*-//
//
// Internal. The public kernels validate, split rows over the pool and call
// these loops; one table per instruction-set level, picked at call time.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_ROWKERNELS_H
#define FOLIO_CODEGEN_CPU_ROWKERNELS_H

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/CPUFeatures.h"

#include <cstdint>

namespace folio::cpu::detail {

struct RowKernels {
  /// y = x / rms(x) * (weightOffset + w); w may be null (treated as 0, so
  /// the factor is weightOffset).
  void (*rmsNorm)(const float *x, const float *w, float weightOffset, float eps,
                  float *y, int64_t n);
  /// y = (x - mean) / sqrt(var + eps) * w + b; w, b may be null (1, 0).
  void (*layerNorm)(const float *x, const float *w, const float *b, float eps,
                    float *y, int64_t n);
  void (*activation)(const float *x, float *y, int64_t n, Activation act);
  void (*gated)(const float *gate, const float *up, float *y, int64_t n,
                Activation act);
  void (*add)(const float *a, const float *b, float *y, int64_t n);
  void (*softmax)(const float *x, float *y, int64_t n);
  void (*softCap)(const float *x, float *y, int64_t n, float cap);
  /// One head of rotary: pairs (i, i + half), or (2i, 2i + 1) when
  /// interleaved, rotated by cs[i] (cosines) and cs[half + i] (sines);
  /// elements [2 * half, n) are copied. y may equal x.
  void (*rotary)(const float *x, float *y, const float *cs, int64_t half,
                 int64_t n, bool interleaved);
};

const RowKernels &scalarRowKernels();
const RowKernels &avx512RowKernels();

inline const RowKernels &rowKernels() {
  return activeIsa() == Isa::Avx512 ? avx512RowKernels() : scalarRowKernels();
}

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_ROWKERNELS_H
