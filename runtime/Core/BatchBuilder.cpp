//===- BatchBuilder.cpp - One engine step's serving-contract arrays -------===//

#include "runtime/Core/BatchBuilder.h"

#include "runtime/Sampler/LogitsProcessors.h"

#include <algorithm>

namespace folio::core {

Expected<exec::ForwardBatch>
buildForwardBatch(const std::vector<ScheduledSequence> &seqs,
                  int64_t blockSize) {
  if (blockSize <= 0)
    return Status::invalidArgument("block size must be positive");
  exec::ForwardBatch b;
  b.queryStartLoc.push_back(0);
  for (const ScheduledSequence &s : seqs)
    b.maxBlocks = std::max<int64_t>(b.maxBlocks, int64_t(s.blockTable->size()));
  b.maxBlocks = std::max<int64_t>(b.maxBlocks, 1);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const ScheduledSequence &s = seqs[i];
    std::string which = "sequence " + std::to_string(i);
    int64_t end = s.numComputed + s.numScheduled;
    if (s.numComputed < 0 || s.numScheduled <= 0 ||
        end > int64_t(s.tokens->size()))
      return Status::invalidArgument(
          which + ": scheduled tokens [" + std::to_string(s.numComputed) +
          ", " + std::to_string(end) + ") are not among its " +
          std::to_string(s.tokens->size()) + " tokens");
    if (end > int64_t(s.blockTable->size()) * blockSize)
      return Status::invalidArgument(
          which + ": its " + std::to_string(s.blockTable->size()) +
          " blocks cannot hold " + std::to_string(end) + " tokens");
    for (int64_t p = s.numComputed; p < end; ++p) {
      b.tokens.push_back((*s.tokens)[size_t(p)]);
      b.positions.push_back(int32_t(p));
      int64_t block = (*s.blockTable)[size_t(p / blockSize)];
      b.slotMapping.push_back(block * blockSize + p % blockSize);
    }
    b.queryStartLoc.push_back(int32_t(b.tokens.size()));
    b.seqLens.push_back(int32_t(end));
    for (int64_t j = 0; j < b.maxBlocks; ++j)
      b.blockTables.push_back(j < int64_t(s.blockTable->size())
                                  ? (*s.blockTable)[size_t(j)]
                                  : kNullBlockId);
    if (s.wantLogits)
      b.logitsIndices.push_back(int32_t(b.tokens.size()) - 1);
  }
  return b;
}

exec::DeviceDraw deviceDraw(const SamplingParams &params, double uniform,
                            const std::vector<TokenId> *prompt,
                            const std::vector<TokenId> *output) {
  exec::DeviceDraw d;
  if (hasPenalties(params)) {
    d.repetitionPenalty = params.repetitionPenalty;
    d.frequencyPenalty = params.frequencyPenalty;
    d.presencePenalty = params.presencePenalty;
    if (prompt && output)
      penaltyList(params, *prompt, *output, d.penaltyTokens, d.penaltyCounts);
  }
  if (params.isGreedy()) {
    d.temperature = 0.0f;
    return d;
  }
  d.temperature = params.temperature;
  d.topK = params.topK;
  d.topP = params.topP;
  d.minP = params.minP;
  d.uniform = uniform;
  return d;
}

} // namespace folio::core
