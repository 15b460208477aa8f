//===- EngineHarness.h - The engine loop over a FakeModel ------*- C++ -*-===//

#ifndef FOLIO_TEST_UNITTESTS_RUNTIME_ENGINEHARNESS_H
#define FOLIO_TEST_UNITTESTS_RUNTIME_ENGINEHARNESS_H

#include "runtime/Scheduler/Scheduler.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace folio::test {

struct TimedRequest {
  NewRequest request;
  /// Step at which the request is added.
  size_t arrivalStep = 0;
};

struct RunResult {
  std::map<RequestId, std::vector<TokenId>> outputs;
  std::map<RequestId, FinishReason> finishReasons;
  uint64_t numPreemptions = 0;
  uint64_t numPrefixHitTokens = 0;
  uint64_t numAcceptedDrafts = 0;
  uint64_t numRejectedDrafts = 0;
  size_t numSteps = 0;
  size_t maxTokensInStep = 0;
  /// Anything that went wrong: invariant breaks, contract violations,
  /// refused requests, stalls.
  std::vector<std::string> errors;
};

/// Proposes draft tokens for a running request before each step.
using Proposer = std::function<std::vector<TokenId>(const Request &)>;

/// Runs schedule -> FakeModel -> update until every request finishes,
/// checking the scheduler's invariants after every step.
RunResult runEngine(const SchedulerConfig &config,
                    const KVCacheConfig &kvConfig,
                    const std::vector<TimedRequest> &requests, size_t vocabSize,
                    const Proposer &proposer = {});

} // namespace folio::test

#endif // FOLIO_TEST_UNITTESTS_RUNTIME_ENGINEHARNESS_H
