//===- FakeModel.h - A deterministic stand-in for the executor -*- C++ -*-===//
//
// Consumes SchedulerOutputs exactly as an executor would: keeps per-request
// state from full and diff updates, builds the flattened batch (tokens,
// positions, slot mapping through the block tables), writes each token into
// a simulated paged KV cache, and then reads every row's whole context back
// out of the cache through the block table. Logits are a hash of that
// context, so a wrong block table, a bad slot, an evicted or wrongly shared
// block all change the output — and a correct runtime reproduces it
// exactly, whatever the batching, chunking, preemption or caching.
//
// Draft tokens are verified by exact match against what the sampler picks
// at that position; with a position-keyed sampler this is lossless for
// greedy and seeded sampling alike.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_RUNTIME_FAKEMODEL_H
#define FOLIO_TEST_UNITTESTS_RUNTIME_FAKEMODEL_H

#include "runtime/Scheduler/SchedulerOutput.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace folio::test {

class FakeModel {
public:
  FakeModel(size_t numBlocks, size_t blockSize, size_t vocabSize);

  /// Runs one step. Contract violations are collected in errors().
  ModelRunnerOutput execute(const SchedulerOutput &output);

  /// The model's logits after the context `tokens` (for reference checks).
  std::vector<float> logitsFor(const std::vector<TokenId> &tokens) const;

  const std::vector<std::string> &errors() const { return errors_; }
  size_t vocabSize() const { return vocabSize_; }
  /// Draft tokens accepted and rejected so far.
  uint64_t numAccepted() const { return numAccepted_; }
  uint64_t numRejected() const { return numRejected_; }

private:
  struct Slot {
    TokenId token = -1;
    int64_t position = -1;
  };
  struct RunnerRequest {
    std::vector<TokenId> promptTokenIds;
    std::vector<TokenId> tokens;
    std::vector<BlockId> blockTable;
    SamplingParams params;
    uint64_t seed = 0;
  };

  int64_t slotOf(const RunnerRequest &request, size_t position);
  std::vector<float> logitsFromCache(const RunnerRequest &request,
                                     size_t lastPosition);
  void error(const std::string &message) { errors_.push_back(message); }

  size_t numBlocks_;
  size_t blockSize_;
  size_t vocabSize_;
  std::vector<Slot> cache_;
  std::unordered_map<RequestId, RunnerRequest> requests_;
  std::vector<std::string> errors_;
  uint64_t numAccepted_ = 0;
  uint64_t numRejected_ = 0;
};

} // namespace folio::test

#endif // FOLIO_TEST_UNITTESTS_RUNTIME_FAKEMODEL_H
