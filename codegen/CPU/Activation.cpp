//===- Activation.cpp - Activations and gated MLP elementwise -------------===//

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/RowKernels.h"
#include "codegen/CPU/Validate.h"

namespace folio::cpu {

using namespace detail;

const char *activationName(Activation act) {
  switch (act) {
  case Activation::Silu:
    return "silu";
  case Activation::GeluErf:
    return "gelu";
  case Activation::GeluTanh:
    return "gelu_tanh";
  }
  return "?";
}

Status activation(const float *x, float *y, int64_t n, Activation act,
                  ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNonNegative("activation", "n", n));
  FOLIO_RETURN_IF_ERROR(checkPointer("activation", "x", x, n));
  FOLIO_RETURN_IF_ERROR(checkPointer("activation", "y", y, n));
  const RowKernels &k = rowKernels();
  pool.parallelFor(n, 16384, [&](int64_t b, int64_t e) {
    k.activation(x + b, y + b, e - b, act);
  });
  return Status::success();
}

Status gatedActivation(const float *gate, int64_t gateStride, const float *up,
                       int64_t upStride, float *out, int64_t rows, int64_t dim,
                       Activation act, ThreadPool &pool) {
  const char *kernel = "gatedActivation";
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "rows", rows));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "dim", dim));
  if (rows > 1 && (gateStride < dim || upStride < dim))
    return Status::error("gatedActivation: row strides must be >= dim");
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "gate", gate, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "up", up, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "out", out, rows * dim));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      k.gated(gate + r * gateStride, up + r * upStride, out + r * dim, dim,
              act);
  });
  return Status::success();
}

} // namespace folio::cpu
