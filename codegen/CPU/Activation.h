//===- Activation.h - Activations and gated MLP elementwise -----*- C++ -*-===//

#ifndef FOLIO_CODEGEN_CPU_ACTIVATION_H
#define FOLIO_CODEGEN_CPU_ACTIVATION_H

#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>

namespace folio::cpu {

enum class Activation {
  Silu,     ///< x * sigmoid(x)
  GeluErf,  ///< 0.5 x (1 + erf(x / sqrt 2))
  GeluTanh, ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
};

const char *activationName(Activation act);

/// y[i] = act(x[i]) for n elements; y may alias x.
Status activation(const float *x, float *y, int64_t n, Activation act,
                  ThreadPool &pool = ThreadPool::global());

/// out[r, i] = act(gate[r, i]) * up[r, i] for `rows` rows of `dim` elements.
/// Row strides (in elements) let gate and up be the two halves of a fused
/// gate_up projection: gate = buf, up = buf + dim, strides 2*dim.
/// out is dense [rows, dim] and may alias gate when the strides allow it.
Status gatedActivation(const float *gate, int64_t gateStride, const float *up,
                       int64_t upStride, float *out, int64_t rows, int64_t dim,
                       Activation act, ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_ACTIVATION_H
