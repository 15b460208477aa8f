//===- ServingEngine.h - The continuous-batching engine loop ----*- C++ -*-===//
//
// schedule -> forward (the compiled plan) -> sample -> update: each step
// the scheduler picks what runs under its token and sequence budgets
// (chunked prefill, preemption by recompute), the model runner executes it,
// and the scheduler appends the sampled tokens, applies stop conditions and
// frees finished requests' blocks. The scheduler's block tables address the
// executor's KV cache directly.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_SERVINGENGINE_H
#define FOLIO_RUNTIME_CORE_SERVINGENGINE_H

#include "runtime/Core/ModelRunner.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Scheduler/Scheduler.h"
#include "runtime/SpecDecode/Proposer.h"
#include "runtime/SpecDecode/SpecController.h"

#include <functional>
#include <memory>
#include <unordered_map>

namespace folio::core {

/// Speculative decoding: off unless a proposer is given.
struct SpeculativeConfig {
  std::unique_ptr<spec::Proposer> proposer;
  /// Drafts per sequence and step at most (--num-speculative-tokens).
  size_t numSpeculativeTokens = 0;
  /// Choose k per step from measured acceptance and step times (0 when
  /// speculating stops paying); off: always numSpeculativeTokens.
  bool adaptive = true;
};

/// What speculation did over the engine's life.
struct SpeculativeStats {
  uint64_t numProposed = 0; ///< drafts verified
  uint64_t numAccepted = 0; ///< drafts kept
  /// Sequence-steps that verified drafts, and tokens they emitted (kept
  /// drafts plus one each).
  uint64_t numVerifiedSeqSteps = 0;
  uint64_t numEmittedTokens = 0;
  /// Steps that proposed, and the sum of the k they chose.
  uint64_t numSpecSteps = 0;
  uint64_t sumK = 0;
  /// Decode steps that chose k = 0 (speculation judged not to pay).
  uint64_t numOffSteps = 0;
  /// Steps whose time the adaptive controller took as the cost of their
  /// k: decode-only steps whose drafts were proposed steadily.
  uint64_t numTimedSteps = 0;
  double proposeSeconds = 0; ///< in the proposer (draft model or lookup)
  double targetSeconds = 0;  ///< in the target's steps (forward, verify)

  double acceptanceRate() const {
    return numProposed ? double(numAccepted) / double(numProposed) : 0.0;
  }
  /// Tokens per sequence-step that verified: kept drafts + 1.
  double meanAcceptedLength() const {
    return numVerifiedSeqSteps
               ? double(numEmittedTokens) / double(numVerifiedSeqSteps)
               : 0.0;
  }
};

class ServingEngine {
public:
  /// Loads `plan`, sizes the executor's KV cache to `kvCache.numBlocks`
  /// and builds the scheduler. The block size must be the plan's; the
  /// scheduler's max-model-len at most the plan's max_positions and
  /// max_context (the scheduler then refuses requests whose prompt +
  /// max_tokens exceed it).
  ///
  /// With `speculative.proposer`, each step ends by proposing drafts for
  /// the decoding requests, which the next step verifies.
  static Expected<std::unique_ptr<ServingEngine>>
  create(std::shared_ptr<const plan::Plan> plan,
         std::unique_ptr<exec::Executor> executor,
         const SchedulerConfig &schedulerConfig, const KVCacheConfig &kvCache,
         SpeculativeConfig speculative = {});

  Status addRequest(const NewRequest &request) {
    return scheduler->addRequest(request);
  }
  Status abortRequest(const RequestId &id) {
    return scheduler->abortRequest(id);
  }

  /// One engine step; the outputs of the requests that advanced. An empty
  /// result with unfinished requests means they are all waiting for memory.
  /// A request whose logits row held NaN or +inf, or only -inf, finishes
  /// alone with FinishReason::Error and RequestOutput::error set; the step
  /// itself succeeds.
  Expected<std::vector<RequestOutput>> step();

  /// Steps until every request finished, calling `onOutput` for each
  /// request's news as it arrives (streaming). Fails if a step fails or no
  /// progress is possible.
  Status
  runToCompletion(const std::function<void(const RequestOutput &)> &onOutput);

  /// Token slots holding a running request's KV over the token slots of
  /// every held block, each physical block counted once however many
  /// requests share it (paging wastes only partly filled last blocks); 0
  /// when no block is held.
  double kvUtilization() const;
  /// The loaded plan's KV geometry (bytes per block, dtypes by layer).
  exec::KVCacheLayout kvCacheLayout() const {
    return executor->kvCacheLayout();
  }

  /// Speculation so far (all zero when off).
  const SpeculativeStats &speculativeStats() const { return specStats; }
  /// The proposer, or null when speculation is off.
  const spec::Proposer *proposer() const { return speculative.proposer.get(); }

  bool hasUnfinishedRequests() const {
    return scheduler->hasUnfinishedRequests();
  }
  const Scheduler &getScheduler() const { return *scheduler; }

private:
  ServingEngine() = default;

  std::shared_ptr<const plan::Plan> plan;
  std::unique_ptr<exec::Executor> executor;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<ModelRunner> runner;

  /// Drafts for the next step's decoding requests.
  Status propose(const SchedulerOutput &scheduled,
                 const std::vector<RequestOutput> &outputs);
  SpeculativeConfig speculative;
  std::unique_ptr<spec::SpecController> controller;
  SpeculativeStats specStats;
  DraftDistributions draftProbs;
  /// The most drafts a request took in the last proposing step, and
  /// whether every request took the controller's k (the step's time is
  /// then the cost of lastK).
  size_t lastK = 0;
  bool lastStepTimed = true;
  double lastProposeSeconds = 0;
};

/// Whether a request speculates the configured K every step rather than
/// the adaptive k: it samples with a seed of its own, and promises the same
/// text for the same prompt and seed, which a k that follows the machine's
/// timing would break (a position is drawn otherwise as a draft than as
/// the bonus token). Greedy requests decode the same text at any k.
inline bool fixedDraftCount(const SamplingParams &params) {
  return !params.isGreedy() && params.seed.has_value();
}

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_SERVINGENGINE_H
