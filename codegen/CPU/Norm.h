//===- Norm.h - RMSNorm and LayerNorm over rows ------------------*- C++
//-*-===//

#ifndef FOLIO_CODEGEN_CPU_NORM_H
#define FOLIO_CODEGEN_CPU_NORM_H

#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>

namespace folio::cpu {

/// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * (weightOffset + weight) for
/// `rows` rows of `dim`. weightOffset is 0 for Llama-style models and 1 for
/// Gemma's (1 + w). weight may be null (then the factor is weightOffset).
/// y may alias x.
Status rmsNorm(const float *x, const float *weight, float *y, int64_t rows,
               int64_t dim, float eps, float weightOffset = 0.0f,
               ThreadPool &pool = ThreadPool::global());

/// y[r] = (x[r] - mean) / sqrt(var + eps) * weight + bias (biased variance,
/// as torch.nn.LayerNorm). weight and bias may be null. y may alias x.
Status layerNorm(const float *x, const float *weight, const float *bias,
                 float *y, int64_t rows, int64_t dim, float eps,
                 ThreadPool &pool = ThreadPool::global());

/// The residual add fused with the norm that reads it: sum = a + b, then
/// y = rmsNorm(sum) (or layerNorm), one row at a time so each sum row is
/// normalised while it is in L1. Bitwise equal to add() followed by
/// rmsNorm() / layerNorm(). sum may alias a or b.
Status addRmsNorm(const float *a, const float *b, float *sum,
                  const float *weight, float *y, int64_t rows, int64_t dim,
                  float eps, float weightOffset = 0.0f,
                  ThreadPool &pool = ThreadPool::global());
Status addLayerNorm(const float *a, const float *b, float *sum,
                    const float *weight, const float *bias, float *y,
                    int64_t rows, int64_t dim, float eps,
                    ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_NORM_H
