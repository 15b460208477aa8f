//===- Elementwise.cpp - Residual add, softmax, soft-cap ------------------===//

#include "codegen/CPU/Elementwise.h"
#include "codegen/CPU/RowKernels.h"
#include "codegen/CPU/Validate.h"

#include <cmath>

namespace folio::cpu {

using namespace detail;

Status add(const float *a, const float *b, float *y, int64_t n,
           ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNonNegative("add", "n", n));
  FOLIO_RETURN_IF_ERROR(checkPointer("add", "a", a, n));
  FOLIO_RETURN_IF_ERROR(checkPointer("add", "b", b, n));
  FOLIO_RETURN_IF_ERROR(checkPointer("add", "y", y, n));
  const RowKernels &k = rowKernels();
  pool.parallelFor(n, 16384, [&](int64_t s, int64_t e) {
    k.add(a + s, b + s, y + s, e - s);
  });
  return Status::success();
}

Status softmax(const float *x, float *y, int64_t rows, int64_t dim,
               ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNonNegative("softmax", "rows", rows));
  FOLIO_RETURN_IF_ERROR(checkPositive("softmax", "dim", dim));
  FOLIO_RETURN_IF_ERROR(checkPointer("softmax", "x", x, rows * dim));
  FOLIO_RETURN_IF_ERROR(checkPointer("softmax", "y", y, rows * dim));
  const RowKernels &k = rowKernels();
  pool.parallelFor(rows, rowGrain(dim), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      k.softmax(x + r * dim, y + r * dim, dim);
  });
  return Status::success();
}

Status softCap(const float *x, float *y, int64_t n, float cap,
               ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(checkNonNegative("softCap", "n", n));
  FOLIO_RETURN_IF_ERROR(checkPointer("softCap", "x", x, n));
  FOLIO_RETURN_IF_ERROR(checkPointer("softCap", "y", y, n));
  if (!(cap > 0.0f) || std::isinf(cap))
    return Status::error("softCap: cap must be finite and > 0");
  const RowKernels &k = rowKernels();
  pool.parallelFor(n, 16384, [&](int64_t s, int64_t e) {
    k.softCap(x + s, y + s, e - s, cap);
  });
  return Status::success();
}

} // namespace folio::cpu
