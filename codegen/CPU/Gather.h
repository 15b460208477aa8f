//===- Gather.h - Embedding lookup and row gathers ---------------*- C++
//-*-===//

#ifndef FOLIO_CODEGEN_CPU_GATHER_H
#define FOLIO_CODEGEN_CPU_GATHER_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"
#include "codegen/CPU/WeightPack.h"

#include <cstdint>

namespace folio::cpu {

/// out[t] = table[ids[t]] * scale, converted to f32. table is [vocab, dim]
/// in `tableType`; scale is 1 for most models and sqrt(hidden) for Gemma.
/// An id outside [0, vocab) is an error (nothing is written then).
Status embedding(const int32_t *ids, int64_t numTokens, const void *table,
                 DType tableType, int64_t vocab, int64_t dim, float *out,
                 float scale = 1.0f, ThreadPool &pool = ThreadPool::global());

/// out[t] = row ids[t] of a packed weight table, widened to f32 exactly as
/// weightViewAt reads each element, times `scale`. The table is a tied
/// model's lm_head stored once for both uses (int8 codes with their row
/// scale and outlier columns, fp8_e4m3, int4 groups, or 16-/32-bit rows):
/// a token's embedding is row `id` of W[vocab, dim]. An id outside
/// [0, table.n) is an error (nothing is written then).
Status embeddingRows(const int32_t *ids, int64_t numTokens,
                     const WeightView &table, float *out, float scale = 1.0f,
                     ThreadPool &pool = ThreadPool::global());

/// out[i] = src[indices[i]] for rows of `dim` floats (logits rows, say).
/// An index outside [0, srcRows) is an error. out must not overlap src.
Status gatherRows(const float *src, int64_t srcRows, int64_t dim,
                  const int32_t *indices, int64_t numIndices, float *out,
                  ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_GATHER_H
