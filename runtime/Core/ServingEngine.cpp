//===- ServingEngine.cpp - The continuous-batching engine loop ------------===//

#include "runtime/Core/ServingEngine.h"

#include "runtime/Core/Engine.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <unordered_map>

namespace folio::core {

Expected<std::unique_ptr<ServingEngine>>
ServingEngine::create(std::shared_ptr<const plan::Plan> plan,
                      std::unique_ptr<exec::Executor> executor,
                      const SchedulerConfig &schedulerConfig,
                      const KVCacheConfig &kvCache,
                      SpeculativeConfig speculative) {
  if (speculative.proposer && speculative.numSpeculativeTokens == 0)
    return Status::invalidArgument(
        "speculative decoding needs --num-speculative-tokens >= 1");
  if (!speculative.proposer && speculative.numSpeculativeTokens > 0)
    return Status::invalidArgument(
        "--num-speculative-tokens needs a proposer (--speculative-model or "
        "--speculative-method ngram)");
  // The scheduler keeps every request within max-model-len, so that is
  // what must fit the plan.
  if (Status s = Engine::checkMaxModelLen(
          *plan, int64_t(std::min<size_t>(schedulerConfig.maxModelLen,
                                          size_t(INT64_MAX))));
      !s)
    return s;
  if (Status s = executor->load(plan); !s)
    return s;
  exec::KVCacheLayout layout = executor->kvCacheLayout();
  if (layout.numLayers == 0)
    return Status::invalidArgument("the plan has no KV cache inputs");
  if (size_t(layout.blockSize) != kvCache.blockSize)
    return Status::invalidArgument(
        "the KV cache block size (" + std::to_string(kvCache.blockSize) +
        ") differs from the plan's (" + std::to_string(layout.blockSize) +
        "); recompile with --block-size or pass the plan's");
  if (Status s = executor->allocateKVCache(int64_t(kvCache.numBlocks)); !s)
    return s;
  Expected<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::create(schedulerConfig, kvCache);
  if (!scheduler)
    return scheduler.status();
  auto engine = std::unique_ptr<ServingEngine>(new ServingEngine());
  engine->plan = std::move(plan);
  engine->executor = std::move(executor);
  engine->scheduler = std::move(*scheduler);
  engine->runner =
      std::make_unique<ModelRunner>(*engine->executor, layout.blockSize);
  if (speculative.proposer) {
    engine->controller = std::make_unique<spec::SpecController>(
        speculative.numSpeculativeTokens, speculative.adaptive);
    // A draft model on the target's GPU keeps its distributions there.
    speculative.proposer->keepProbsFor(*engine->executor);
  }
  engine->speculative = std::move(speculative);
  return engine;
}

double ServingEngine::kvUtilization() const {
  const KVCacheManager &kv = scheduler->kvCache();
  const BlockPool &pool = kv.pool();
  size_t held = pool.numUsableBlocks() - pool.numFreeBlocks();
  if (held == 0)
    return 0;
  // Slots holding KV, each physical block counted once: requests sharing
  // a prefix hold the same blocks, and counting their tokens per request
  // would report more than the cache holds.
  size_t blockSize = kv.blockSize();
  std::unordered_map<BlockId, size_t> filled;
  for (const Request *r : scheduler->runningRequests()) {
    const std::vector<BlockId> &table = kv.blockIds(r->requestId);
    for (size_t i = 0; i < table.size(); ++i) {
      size_t start = i * blockSize;
      if (start >= r->numComputedTokens)
        break;
      size_t n = std::min(blockSize, r->numComputedTokens - start);
      size_t &slot = filled[table[i]];
      slot = std::max(slot, n);
    }
  }
  size_t tokens = 0;
  for (const auto &[block, n] : filled)
    tokens += n;
  return double(tokens) / double(held * blockSize);
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

Expected<std::vector<RequestOutput>> ServingEngine::step() {
  Clock::time_point start = Clock::now();
  SchedulerOutput scheduled = scheduler->schedule();
  Expected<ModelRunnerOutput> result =
      runner->execute(scheduled, controller ? &draftProbs : nullptr);
  if (!result)
    return result.status();
  std::vector<RequestOutput> outputs =
      scheduler->updateFromOutput(scheduled, *result);
  if (!controller)
    return outputs;
  double stepSeconds = secondsSince(start);
  specStats.targetSeconds += stepSeconds;

  // Acceptance of what this step verified.
  size_t proposed = 0, kept = 0, rejectedRuns = 0;
  for (const RunnerRequestOutput &out : result->outputs) {
    auto spec = scheduled.scheduledSpecDecodeTokens.find(out.requestId);
    if (spec == scheduled.scheduledSpecDecodeTokens.end() ||
        spec->second.empty() || out.sampledTokenIds.empty())
      continue;
    size_t n = out.sampledTokenIds.size() - 1;
    proposed += spec->second.size();
    kept += n;
    rejectedRuns += n < spec->second.size();
    controller->recordSequence(spec->second.size(), n);
    ++specStats.numVerifiedSeqSteps;
    specStats.numEmittedTokens += n + 1;
  }
  specStats.numProposed += proposed;
  specStats.numAccepted += kept;
  controller->recordAcceptance(proposed, kept, rejectedRuns);
  // A step that only decoded is comparable with other such steps; its
  // cost includes proposing its drafts at the end of the step before.
  bool decodeOnly = !scheduled.numScheduledTokens.empty() &&
                    scheduled.scheduledNewRequests.empty();
  for (const auto &[id, count] : scheduled.numScheduledTokens) {
    auto spec = scheduled.scheduledSpecDecodeTokens.find(id);
    size_t drafts = spec == scheduled.scheduledSpecDecodeTokens.end()
                        ? 0
                        : spec->second.size();
    decodeOnly &= count == drafts + 1;
  }
  // Its proposing must have been steady too: catching the draft up after
  // steps without speculation (a small prefill of the tokens decoded
  // meanwhile) is paid once; timed as the cost of the k that ended those
  // steps, it made that k look too dear to choose again. (With k = 0 the
  // proposer was not called.)
  bool steady = lastK == 0 || speculative.proposer->lastProposalSteady();
  if (decodeOnly && steady && lastStepTimed) {
    controller->recordTime(scheduled.numScheduledTokens.size(), lastK,
                           stepSeconds + lastProposeSeconds);
    ++specStats.numTimedSteps;
  }

  if (Status s = propose(scheduled, outputs); !s)
    return s;
  return outputs;
}

Status ServingEngine::propose(const SchedulerOutput &scheduled,
                              const std::vector<RequestOutput> &outputs) {
  spec::Proposer &proposer = *speculative.proposer;
  // What the proposer holds for requests that left the batch goes now.
  for (const RequestId &id : scheduled.finishedRequestIds)
    proposer.release(id);
  for (const RequestId &id : scheduled.preemptedRequestIds)
    proposer.release(id);
  for (const RequestOutput &out : outputs)
    if (out.finished)
      proposer.release(out.requestId);
  draftProbs.clear();

  Clock::time_point start = Clock::now();
  // Requests that decode next step: everything but their newest token
  // computed. Requests still prefilling do not speculate.
  std::vector<const Request *> decoding;
  for (const Request *r : scheduler->runningRequests())
    if (r->numComputedTokens + 1 == r->numTokens() &&
        r->numTokens() < r->maxTotalTokens())
      decoding.push_back(r);
  const size_t chosen =
      decoding.empty() ? 0 : controller->chooseK(decoding.size());
  // A request that samples with its own seed promises the same text for
  // the same prompt and seed. Its draws are keyed by position, but a
  // position reached as a draft is drawn otherwise than one reached as
  // the bonus token or without speculation, so its k must not follow the
  // machine's timing: it speculates the configured K every step.
  const size_t fixedK = speculative.numSpeculativeTokens;
  auto drafts = [&](const Request *r) {
    return fixedDraftCount(r->samplingParams) ? fixedK : chosen;
  };
  lastK = 0;
  for (const Request *r : decoding)
    lastK = std::max(lastK, drafts(r));
  // Timed as the cost of `chosen` (then lastK) only when every request
  // took it.
  lastStepTimed = true;
  for (const Request *r : decoding)
    lastStepTimed &= drafts(r) == chosen;
  if (lastK == 0) {
    specStats.numOffSteps += !decoding.empty();
    lastProposeSeconds = 0;
    return Status::ok();
  }
  std::vector<spec::ProposeInput> inputs;
  for (const Request *r : decoding) {
    spec::ProposeInput in;
    in.requestId = &r->requestId;
    in.tokens = &r->allTokenIds;
    in.numPromptTokens = r->numPromptTokens();
    in.params = &r->samplingParams;
    in.seed = r->seed;
    // The last draft must leave room for the bonus token.
    in.maxDrafts =
        std::min(drafts(r), r->maxTotalTokens() - r->numTokens() - 1);
    inputs.push_back(in);
  }
  std::vector<spec::Proposal> proposals;
  if (Status s = proposer.propose(inputs, lastK, proposals); !s)
    return s;
  size_t guessed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    spec::Proposal &p = proposals[i];
    if (p.tokens.empty())
      continue;
    ++guessed;
    if (Status s =
            scheduler->setSpeculativeTokens(*inputs[i].requestId, p.tokens);
        !s)
      return s;
    if (!p.probs.empty())
      draftProbs.host[*inputs[i].requestId] = std::move(p.probs);
    if (p.probsRow >= 0)
      draftProbs.deviceRow[*inputs[i].requestId] = p.probsRow;
  }
  if (!draftProbs.deviceRow.empty())
    draftProbs.device = proposer.deviceProbs();
  // Sequences one token from their limit cannot take a draft: not a miss.
  size_t eligible = 0;
  for (const spec::ProposeInput &in : inputs)
    eligible += in.maxDrafts > 0;
  controller->recordCoverage(eligible, guessed);
  ++specStats.numSpecSteps;
  specStats.sumK += lastK;
  lastProposeSeconds = secondsSince(start);
  specStats.proposeSeconds += lastProposeSeconds;
  return Status::ok();
}

Status ServingEngine::runToCompletion(
    const std::function<void(const RequestOutput &)> &onOutput) {
  while (scheduler->hasUnfinishedRequests()) {
    Expected<std::vector<RequestOutput>> outputs = step();
    if (!outputs)
      return outputs.status();
    if (outputs->empty() && scheduler->numRunning() == 0)
      return Status::resourceExhausted(
          "no request can be scheduled: the KV cache is too small for the "
          "waiting requests");
    for (const RequestOutput &out : *outputs)
      onOutput(out);
  }
  return Status::ok();
}

} // namespace folio::core
