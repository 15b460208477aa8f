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

namespace {

/// sum = a + b row by row, each row normalised by `norm` while it is in L1.
template <typename NormRow>
Status addThenNorm(const char *kernel, const float *a, const float *b,
                   float *sum, float *y, int64_t rows, int64_t dim, float eps,
                   ThreadPool &pool, NormRow norm) {
  FOLIO_RETURN_IF_ERROR(checkNorm(kernel, sum, y, rows, dim, eps));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "a", a, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "b", b, rows * dim));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      k.add(a + r * dim, b + r * dim, sum + r * dim, dim);
      norm(k, sum + r * dim, y + r * dim);
    }
  });
  return Status::success();
}

} // namespace

Status addRmsNorm(const float *a, const float *b, float *sum,
                  const float *weight, float *y, int64_t rows, int64_t dim,
                  float eps, float weightOffset, ThreadPool &pool) {
  return addThenNorm("addRmsNorm", a, b, sum, y, rows, dim, eps, pool,
                     [&](const RowKernels &k, const float *x, float *out) {
                       k.rmsNorm(x, weight, weightOffset, eps, out, dim);
                     });
}

Status addLayerNorm(const float *a, const float *b, float *sum,
                    const float *weight, const float *bias, float *y,
                    int64_t rows, int64_t dim, float eps, ThreadPool &pool) {
  return addThenNorm("addLayerNorm", a, b, sum, y, rows, dim, eps, pool,
                     [&](const RowKernels &k, const float *x, float *out) {
                       k.layerNorm(x, weight, bias, eps, out, dim);
                     });
}

} // namespace folio::cpu
