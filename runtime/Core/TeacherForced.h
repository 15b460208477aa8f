//===- TeacherForced.h - Whole sequences through an executor ----*- C++ -*-===//
//
// Runs known token sequences from position 0 as prefill, in chunks, with
// logits for every position: what perplexity, greedy agreement and KV-cache
// calibration need. The engine (scheduler, sampler) is not involved, so the
// result depends on the executor and the plan alone.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_TEACHERFORCED_H
#define FOLIO_RUNTIME_CORE_TEACHERFORCED_H

#include "runtime/Executor/Executor.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <functional>
#include <vector>

namespace folio::core {

struct TeacherForcedOptions {
  /// Tokens per forward call (all sequences together); a sequence longer
  /// than this is split into prefill chunks over its cached prefix.
  int64_t chunkTokens = 2048;
  /// Tokens of each sequence per call at most; 0: as many as fit. 1 runs
  /// every sequence as decode does, one token a step, so each token reads
  /// the cache in the state decoding would leave it (which matters for
  /// caches whose format changes with age, such as int2 KIVI's window).
  int64_t tokensPerSequence = 0;
  /// Called with each chunk's logits rows [rows, vocab] and, per row, the
  /// sequence and position it predicts from; empty: no logits are asked
  /// for (calibration).
  std::function<void(const std::vector<float> &logits, int64_t vocab,
                     const std::vector<int64_t> &seq,
                     const std::vector<int64_t> &pos)>
      onLogits;
};

/// KV blocks runTeacherForced needs for `seqs`, the null block included.
int64_t teacherForcedBlocks(const std::vector<std::vector<TokenId>> &seqs,
                            int64_t blockSize);

/// Runs every sequence of `seqs` (each from position 0, its own blocks from
/// block 1 on) through `executor`, whose KV cache must already hold
/// teacherForcedBlocks(seqs) blocks.
Status runTeacherForced(exec::Executor &executor,
                        const std::vector<std::vector<TokenId>> &seqs,
                        const TeacherForcedOptions &options);

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_TEACHERFORCED_H
