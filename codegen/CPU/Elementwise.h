//===- Elementwise.h - Residual add, softmax, soft-cap ----------*- C++ -*-===//

#ifndef FOLIO_CODEGEN_CPU_ELEMENTWISE_H
#define FOLIO_CODEGEN_CPU_ELEMENTWISE_H

#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>

namespace folio::cpu {

/// y = a + b over n elements (the residual connection); y may alias a or b.
Status add(const float *a, const float *b, float *y, int64_t n,
           ThreadPool &pool = ThreadPool::global());

/// Row-wise softmax over `rows` rows of `dim`; a row that is all -inf
/// becomes all zeros. y may alias x.
Status softmax(const float *x, float *y, int64_t rows, int64_t dim,
               ThreadPool &pool = ThreadPool::global());

/// y = tanh(x / cap) * cap (Gemma 2 logit soft-capping); cap > 0.
Status softCap(const float *x, float *y, int64_t n, float cap,
               ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_ELEMENTWISE_H
