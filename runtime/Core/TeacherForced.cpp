//===- TeacherForced.cpp - Whole sequences through an executor ------------===//

#include "runtime/Core/TeacherForced.h"

#include "runtime/Core/BatchBuilder.h"

#include <algorithm>

namespace folio::core {

int64_t teacherForcedBlocks(const std::vector<std::vector<TokenId>> &seqs,
                            int64_t blockSize) {
  int64_t blocks = 1;
  for (const std::vector<TokenId> &s : seqs)
    blocks += (int64_t(s.size()) + blockSize - 1) / blockSize;
  return blocks;
}

Status runTeacherForced(exec::Executor &executor,
                        const std::vector<std::vector<TokenId>> &seqs,
                        const TeacherForcedOptions &options) {
  const int64_t blockSize = executor.kvCacheLayout().blockSize;
  if (blockSize <= 0)
    return Status::invalidArgument("the executor has no plan loaded");
  if (options.chunkTokens <= 0 || options.tokensPerSequence < 0)
    return Status::invalidArgument(
        "chunkTokens must be positive and tokensPerSequence non-negative");
  std::vector<std::vector<BlockId>> tables(seqs.size());
  BlockId next = 1;
  for (size_t s = 0; s < seqs.size(); ++s) {
    if (seqs[s].empty())
      return Status::invalidArgument("sequence " + std::to_string(s) +
                                     " is empty");
    int64_t n = (int64_t(seqs[s].size()) + blockSize - 1) / blockSize;
    for (int64_t b = 0; b < n; ++b)
      tables[s].push_back(next++);
  }

  // Sequences are taken in order; each call holds up to chunkTokens tokens,
  // splitting a sequence across calls where it does not fit.
  std::vector<int64_t> done(seqs.size(), 0);
  size_t first = 0;
  std::vector<float> logits;
  while (first < seqs.size()) {
    std::vector<ScheduledSequence> step;
    std::vector<int64_t> rowSeq, rowPos;
    int64_t budget = options.chunkTokens;
    for (size_t s = first; s < seqs.size() && budget > 0; ++s) {
      int64_t left = int64_t(seqs[s].size()) - done[s];
      if (left == 0)
        continue;
      int64_t take = std::min(left, budget);
      if (options.tokensPerSequence > 0)
        take = std::min(take, options.tokensPerSequence);
      ScheduledSequence sched;
      sched.tokens = &seqs[s];
      sched.numComputed = done[s];
      sched.numScheduled = take;
      sched.blockTable = &tables[s];
      step.push_back(sched);
      for (int64_t p = done[s]; p < done[s] + take; ++p) {
        rowSeq.push_back(int64_t(s));
        rowPos.push_back(p);
      }
      budget -= take;
    }
    Expected<exec::ForwardBatch> batch = buildForwardBatch(step, blockSize);
    if (!batch)
      return batch.status();
    batch->logitsIndices.clear();
    if (options.onLogits) {
      for (size_t i = 0; i < batch->tokens.size(); ++i)
        batch->logitsIndices.push_back(int32_t(i));
    } else {
      // The contract asks for at least one row per call.
      batch->logitsIndices.push_back(int32_t(batch->tokens.size()) - 1);
    }
    int64_t vocab = 0;
    if (Status st = executor.forward(*batch, logits, vocab); !st)
      return st;
    if (options.onLogits)
      options.onLogits(logits, vocab, rowSeq, rowPos);
    for (const ScheduledSequence &sched : step) {
      size_t s = size_t(sched.tokens - seqs.data());
      done[s] += sched.numScheduled;
    }
    while (first < seqs.size() && done[first] == int64_t(seqs[first].size()))
      ++first;
  }
  return Status::ok();
}

} // namespace folio::core
