//===- PagedAttention.h - Ragged causal attention over a paged cache -*- C++
//-*-//
//
// The vLLM-v1 flattened-batch contract: all tokens scheduled this step form
// one ragged batch. Sequence s owns query tokens [queryStartLoc[s],
// queryStartLoc[s+1]), which are the LAST positions of its context of
// seqLens[s] tokens (already written to the cache by kvWrite), so prefill
// chunks, decode tokens and several speculative tokens per sequence mix
// freely in one call.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_PAGEDATTENTION_H
#define FOLIO_CODEGEN_CPU_PAGEDATTENTION_H

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>

namespace folio::cpu {

/// The step's batch layout (views; nothing owned).
struct RaggedBatch {
  int64_t numTokens = 0;                  ///< T
  int64_t numSeqs = 0;                    ///< S
  const int32_t *queryStartLoc = nullptr; ///< [S + 1], 0 .. T, nondecreasing
  const int32_t *seqLens = nullptr;       ///< [S], context incl. this step
  const int32_t *blockTables = nullptr;   ///< [S, maxBlocksPerSeq]
  int64_t maxBlocksPerSeq = 0;
};

struct AttentionParams {
  int64_t numHeads = 0; ///< query heads; a multiple of the cache's kv heads
  float scale = 0.0f;   ///< usually 1/sqrt(headDim)
  /// 0: none. Otherwise a token at position p sees keys in (p - window, p].
  int64_t slidingWindow = 0;
  /// 0: none. Otherwise scores become tanh(s / softCap) * softCap after
  /// scaling (Gemma 2).
  float softCap = 0.0f;
  /// The caller accepts bf16 inputs to the two products (about 1e-2 of
  /// max|v| off the f32 result, see AttentionTileAmx.cpp), e.g. because
  /// its weights are bf16 anyway: prefill tiles may then run on AMX.
  bool allowBf16 = false;
};

/// Checks everything pagedAttention reads: shapes, the batch's offsets and
/// lengths, and that every block it will read is a valid block id.
Status validatePagedAttention(const KVCacheView &cache,
                              const RaggedBatch &batch,
                              const AttentionParams &params);

/// out[t, h] = softmax over the visible keys of q[t, h] . k, times v, with
/// q and out [numTokens, numHeads, headDim] (dense). Causal within each
/// sequence; GQA maps query head h to kv head h / (numHeads / numKvHeads).
/// Uses an online softmax over chunks of keys: memory is O(tile), never
/// O(T^2). Work items are (sequence, kv head, query tile), all query heads
/// of a kv head together so each K/V row is loaded once per tile; results do
/// not depend on the pool size.
Status pagedAttention(const float *q, const KVCacheView &cache,
                      const RaggedBatch &batch, const AttentionParams &params,
                      float *out, ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_PAGEDATTENTION_H
