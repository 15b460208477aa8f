//===- EngineHarness.cpp - The engine loop over a FakeModel ---------------===//

#include "test/unittests/Runtime/EngineHarness.h"
#include "test/unittests/Runtime/FakeModel.h"

using namespace folio;
using namespace folio::test;

RunResult folio::test::runEngine(const SchedulerConfig &config,
                                 const KVCacheConfig &kvConfig,
                                 const std::vector<TimedRequest> &requests,
                                 size_t vocabSize, const Proposer &proposer) {
  RunResult result;
  Expected<std::unique_ptr<Scheduler>> created =
      Scheduler::create(config, kvConfig);
  if (!created) {
    result.errors.push_back(created.status().message());
    return result;
  }
  Scheduler &scheduler = **created;
  FakeModel model(kvConfig.numBlocks, kvConfig.blockSize, vocabSize);

  size_t numAdded = 0;
  // Generous: every request could be preempted a few times.
  size_t stepLimit = 10000;
  for (size_t step = 0; step < stepLimit; ++step) {
    for (const TimedRequest &timed : requests) {
      if (timed.arrivalStep != step)
        continue;
      ++numAdded;
      if (Status status = scheduler.addRequest(timed.request); !status)
        result.errors.push_back(status.message());
    }
    if (numAdded == requests.size() && !scheduler.hasUnfinishedRequests())
      break;
    if (proposer) {
      for (const auto &entry : result.outputs) {
        const Request *request = scheduler.findRequest(entry.first);
        if (request && request->status == RequestStatus::Running)
          (void)scheduler.setSpeculativeTokens(entry.first, proposer(*request));
      }
    }
    SchedulerOutput output = scheduler.schedule();
    result.maxTokensInStep =
        std::max(result.maxTokensInStep, output.totalNumScheduledTokens);
    if (output.empty() && numAdded == requests.size() &&
        output.preemptedRequestIds.empty()) {
      result.errors.push_back("stalled at step " + std::to_string(step));
      break;
    }
    ModelRunnerOutput ran = model.execute(output);
    for (RequestOutput &out : scheduler.updateFromOutput(output, ran)) {
      std::vector<TokenId> &tokens = result.outputs[out.requestId];
      tokens.insert(tokens.end(), out.newTokenIds.begin(),
                    out.newTokenIds.end());
      if (out.finished)
        result.finishReasons[out.requestId] = out.finishReason;
    }
    if (Status status = scheduler.checkInvariants(); !status) {
      result.errors.push_back("step " + std::to_string(step) + ": " +
                              status.message());
      break;
    }
    ++result.numSteps;
  }
  if (scheduler.hasUnfinishedRequests())
    result.errors.push_back("requests left unfinished");
  const BlockPool &pool = scheduler.kvCache().pool();
  if (pool.numFreeBlocks() != pool.numUsableBlocks())
    result.errors.push_back("blocks leaked after all requests finished");
  result.errors.insert(result.errors.end(), model.errors().begin(),
                       model.errors().end());
  result.numPreemptions = scheduler.numPreemptions();
  result.numPrefixHitTokens = scheduler.kvCache().numPrefixHitTokens();
  result.numAcceptedDrafts = model.numAccepted();
  result.numRejectedDrafts = model.numRejected();
  return result;
}
