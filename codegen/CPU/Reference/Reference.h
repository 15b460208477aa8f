//===- Reference.h - Naive reference kernels for tests ----------*- C++ -*-===//
//
// Each function is the textbook formula: double accumulation, no tiling, no
// threads, no validation (tests pass valid input). The kernels in
// codegen/CPU are tested against these.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_REFERENCE_REFERENCE_H
#define FOLIO_CODEGEN_CPU_REFERENCE_REFERENCE_H

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/Rotary.h"
#include "codegen/CPU/SpecVerify.h"

#include <cstdint>

namespace folio::cpu::ref {

/// y[m, n] = sum_k x[m, k] w[n, k] + bias[n]; w of type wType.
void linear(const float *x, int64_t m, const void *w, DType wType,
            const float *bias, int64_t n, int64_t k, float *y);

void rmsNorm(const float *x, const float *w, float *y, int64_t rows,
             int64_t dim, float eps, float weightOffset);
void layerNorm(const float *x, const float *w, const float *b, float *y,
               int64_t rows, int64_t dim, float eps);

float activation(float x, Activation act);
void softmax(const float *x, float *y, int64_t rows, int64_t dim);
float softCap(float x, float cap);

void embedding(const int32_t *ids, int64_t numTokens, const void *table,
               DType tableType, int64_t dim, float scale, float *out);

/// Rotates x [numTokens, numHeads, headDim] in place, in double precision
/// except for the f32 angle product that the models themselves compute.
void rotary(float *x, int64_t numTokens, int64_t numHeads,
            const int32_t *positions, const RotaryParams &p);

/// Paged attention by the definition: for each token and head, the visible
/// keys' scores, a softmax, a weighted sum; reads the cache through the
/// block tables, each row widened by dequantizeKvRow (KVQuant.h); int2
/// rows come from the residual pools for resident blocks and through
/// kiviDequantizeKey / dequantizeKvRow otherwise.
void pagedAttention(const float *q, const KVCacheView &cache,
                    const RaggedBatch &batch, const AttentionParams &params,
                    float *out);

/// The same attention on unpaged K/V: sequence s's keys and values are
/// k[s] / v[s], each [seqLens[s], numKvHeads, headDim].
void denseAttention(const float *q, const float *const *k,
                    const float *const *v, const int32_t *queryStartLoc,
                    const int32_t *seqLens, int64_t numSeqs, int64_t numKvHeads,
                    int64_t headDim, const AttentionParams &params, float *out);

/// Speculative verification by the definition (SpecVerify.h): writes
/// args.accepted and args.tokens.
void specVerifyGreedy(const SpecVerifyArgs &args);

/// Rejection sampling with every row's softmax as a vector of doubles and
/// the residual normalised before its draw. `margins`, if not null,
/// receives [S]: for each sequence the smallest distance, in probability,
/// between a sampled decision's two sides (u q(x) against p(x); u against
/// the edges of the drawn token's CDF interval; the residual's mass against
/// 0). A kernel that rounds differently can decide otherwise only where
/// that distance is within its rounding error.
void specVerifySample(const SpecVerifyArgs &args, double *margins = nullptr);

} // namespace folio::cpu::ref

#endif // FOLIO_CODEGEN_CPU_REFERENCE_REFERENCE_H
