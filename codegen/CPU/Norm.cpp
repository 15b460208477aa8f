//===- Norm.cpp - RMSNorm and LayerNorm over rows -------------------------===//

#include "codegen/CPU/Norm.h"
#include "codegen/CPU/RowKernels.h"
#include "codegen/CPU/Validate.h"

#include <cmath>

namespace folio::cpu {

using namespace detail;

namespace {

Status checkNorm(const char *kernel, const float *x, float *y, int64_t rows,
                 int64_t dim, float eps) {
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "rows", rows));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "dim", dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "x", x, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "y", y, rows * dim));
  if (!(eps >= 0.0f) || std::isinf(eps))
    return Status::error(std::string(kernel) + ": eps must be finite and >= 0");
  return Status::success();
}

} // namespace

Status rmsNorm(const float *x, const float *weight, float *y, int64_t rows,
               int64_t dim, float eps, float weightOffset, ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNorm("rmsNorm", x, y, rows, dim, eps));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      k.rmsNorm(x + r * dim, weight, weightOffset, eps, y + r * dim, dim);
  });
  return Status::success();
}

Status layerNorm(const float *x, const float *weight, const float *bias,
                 float *y, int64_t rows, int64_t dim, float eps,
                 ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNorm("layerNorm", x, y, rows, dim, eps));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      k.layerNorm(x + r * dim, weight, bias, eps, y + r * dim, dim);
  });
  return Status::success();
}

Status addRmsNorm(const float *a, const float *b, float *sum,
                  const float *weight, float *y, int64_t rows, int64_t dim,
                  float eps, float weightOffset, ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNorm("addRmsNorm", sum, y, rows, dim, eps));
  FOLIO_RETURN_IF_ERROR(checkPointer("addRmsNorm", "a", a, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer("addRmsNorm", "b", b, rows * dim));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      k.add(a + r * dim, b + r * dim, sum + r * dim, dim);
      k.rmsNorm(sum + r * dim, weight, weightOffset, eps, y + r * dim, dim);
    }
  });
  return Status::success();
}

Status addLayerNorm(const float *a, const float *b, float *sum,
                    const float *weight, const float *bias, float *y,
                    int64_t rows, int64_t dim, float eps, ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNorm("addLayerNorm", sum, y, rows, dim, eps));
  FOLIO_RETURN_IF_ERROR(checkPointer("addLayerNorm", "a", a, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer("addLayerNorm", "b", b, rows * dim));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      k.add(a + r * dim, b + r * dim, sum + r * dim, dim);
      k.layerNorm(sum + r * dim, weight, bias, eps, y + r * dim, dim);
    }
  });
  return Status::success();
}

} // namespace folio::cpu
