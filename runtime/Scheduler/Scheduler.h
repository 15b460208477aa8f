//===- Scheduler.h - Continuous batching over a paged KV cache -*- C++ -*-===//
//
// One step: close each request's gap between numComputedTokens and
// numTokensWithSpec() under a token budget and a sequence limit, running
// requests first (their next tokens are latency-critical), then waiting
// ones. A prompt longer than the remaining budget gets a chunk now and the
// rest later: chunked prefill is not a mode, it is what gap closing does.
//
// When a running request cannot get a block, the last request in policy
// order (the newest, under FCFS) is preempted by recomputation: its blocks
// are freed, its computed count reset, its generated tokens kept. Resumed,
// it recomputes prompt plus output and continues exactly where it was.
//
// The engine loop is: schedule() -> forward -> updateFromOutput() -> apply
// aborts and new requests -> schedule(). Each step's forward completes
// before the next schedule(), which is what lets freed blocks be reused and
// computed blocks be shared right away.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SCHEDULER_SCHEDULER_H
#define FOLIO_RUNTIME_SCHEDULER_SCHEDULER_H

#include "runtime/KVCache/KVCacheManager.h"
#include "runtime/Scheduler/Request.h"
#include "runtime/Scheduler/SchedulerConfig.h"
#include "runtime/Scheduler/SchedulerOutput.h"
#include "runtime/Scheduler/SchedulingPolicies.h"
#include "runtime/Support/Status.h"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace folio {

class Scheduler {
public:
  /// Fails on an invalid configuration (see SchedulerConfig::validate).
  static Expected<std::unique_ptr<Scheduler>>
  create(const SchedulerConfig &config, const KVCacheConfig &kvCacheConfig);

  /// Queues a request. With n > 1 it becomes n requests "<id>#0" ...
  /// "<id>#<n-1>" that share the prompt's blocks, sample i seeded with
  /// seed + i. Refuses, changing nothing, a request with bad sampling
  /// parameters, an empty or out-of-vocabulary prompt, a duplicate id, or
  /// prompt plus max_tokens over max-model-len.
  Status addRequest(const NewRequest &request);

  /// Removes a request (or all samples of a parallel request) and frees
  /// its blocks at once.
  Status abortRequest(const RequestId &requestId);

  /// Draft tokens to verify in the next step, replacing earlier ones; cut
  /// so that the request cannot outgrow its maximum length.
  Status setSpeculativeTokens(const RequestId &requestId,
                              std::vector<TokenId> draftTokenIds);

  /// Decides the next step. Never blocks; an empty output means nothing
  /// can run (no requests, or all waiting for memory).
  SchedulerOutput schedule();

  /// Applies the executor's result for `output`'s step: appends sampled
  /// tokens, rolls back rejected draft tokens, caches newly computed full
  /// blocks, and finishes requests that hit a stop condition, freeing
  /// their blocks. A request whose runner output carries an error finishes
  /// alone with FinishReason::Error (its blocks freed, this step's KV not
  /// cached). Returns one entry per request with news.
  std::vector<RequestOutput> updateFromOutput(const SchedulerOutput &output,
                                              const ModelRunnerOutput &result);

  bool hasUnfinishedRequests() const { return !requests_.empty(); }
  size_t numWaiting() const { return waiting_.size(); }
  size_t numRunning() const { return running_.size(); }
  /// Null once a request has finished.
  const Request *findRequest(const RequestId &requestId) const;
  /// The running requests in the order the last step scheduled them.
  std::vector<const Request *> runningRequests() const {
    return {running_.begin(), running_.end()};
  }
  const KVCacheManager &kvCache() const { return kvCache_; }
  const SchedulerConfig &config() const { return config_; }
  uint64_t numPreemptions() const { return numPreemptions_; }
  /// Tokens whose KV the running requests hold (for utilization figures).
  size_t numRunningComputedTokens() const {
    size_t tokens = 0;
    for (const Request *r : running_)
      tokens += r->numComputedTokens;
    return tokens;
  }

  /// Cross-checks scheduler and KV state: running requests hold blocks for
  /// their computed tokens, waiting ones hold none, limits hold, and the
  /// KV cache's own invariants.
  Status checkInvariants() const;

private:
  Scheduler(const SchedulerConfig &config, const KVCacheConfig &kvCacheConfig);

  struct Scheduled {
    Request *request;
    size_t numTokens;
    size_t numComputedBefore;
    bool isNew;
    std::vector<BlockId> newBlockIds;
  };

  Request *lookup(const RequestId &requestId) const;
  Status validateRequest(const NewRequest &request) const;
  void scheduleRunning(std::vector<Scheduled> &scheduled, size_t &budget,
                       SchedulerOutput &output);
  void scheduleWaiting(std::vector<Scheduled> &scheduled, size_t &budget);
  /// Which computed blocks `request` can adopt, or nullopt if it should
  /// wait for the sample it shares its prompt with.
  std::optional<ComputedBlocks> adoptableBlocks(Request &request);
  void preempt(Request *request, SchedulerOutput &output);
  /// Appends one token and reports whether a stop condition now holds.
  bool appendAndCheckStop(Request &request, TokenId token);
  void finish(Request *request, FinishReason reason);
  void sortByPolicy(std::vector<Request *> &requests) const;

  SchedulerConfig config_;
  KVCacheManager kvCache_;
  std::unique_ptr<OrderingPolicy> ordering_;
  std::unique_ptr<CapacityPolicy> capacity_;

  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  /// Parallel requests: parent id -> live sample ids.
  std::unordered_map<RequestId, std::vector<RequestId>> samples_;
  std::vector<Request *> waiting_;
  std::vector<Request *> running_;
  std::vector<RequestId> finishedSinceLastStep_;
  uint64_t nextArrivalIndex_ = 0;
  uint64_t numPreemptions_ = 0;
};

} // namespace folio

#endif // FOLIO_RUNTIME_SCHEDULER_SCHEDULER_H
