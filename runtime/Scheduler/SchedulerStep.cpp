//===- SchedulerStep.cpp - One scheduling step and its update -------------===//

#include "runtime/Scheduler/Scheduler.h"

#include <algorithm>
#include <cassert>

using namespace folio;

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput output;
  std::vector<Scheduled> scheduled;
  size_t budget = config_.maxNumBatchedTokens;

  scheduleRunning(scheduled, budget, output);
  // Memory ran short this step: admitting more would only preempt again.
  if (output.preemptedRequestIds.empty())
    scheduleWaiting(scheduled, budget);

  // numComputedTokens moves only now, so that during the step it still says
  // what earlier (completed) forwards computed; sharing relies on that.
  for (Scheduled &entry : scheduled) {
    Request &request = *entry.request;
    const RequestId &id = request.requestId;
    if (entry.isNew) {
      NewRequestData data;
      data.requestId = id;
      data.promptTokenIds = request.promptTokenIds;
      data.outputTokenIds = request.outputTokenIds;
      data.samplingParams = request.samplingParams;
      data.seed = request.seed;
      data.blockIds = kvCache_.blockIds(id);
      data.numComputedTokens = entry.numComputedBefore;
      output.scheduledNewRequests.push_back(std::move(data));
    } else {
      CachedRequestData data;
      data.requestId = id;
      data.newTokenIds.assign(request.allTokenIds.begin() +
                                  request.numTokensSent,
                              request.allTokenIds.end());
      data.newBlockIds = std::move(entry.newBlockIds);
      data.numComputedTokens = entry.numComputedBefore;
      output.scheduledCachedRequests.push_back(std::move(data));
    }
    request.numTokensSent = request.numTokens();

    size_t end = entry.numComputedBefore + entry.numTokens;
    if (end > request.numTokens()) {
      size_t numSpec = end - request.numTokens();
      output.scheduledSpecDecodeTokens[id].assign(
          request.specTokenIds.begin(), request.specTokenIds.begin() + numSpec);
    }
    output.numScheduledTokens[id] = entry.numTokens;
    output.totalNumScheduledTokens += entry.numTokens;
    request.numComputedTokens = end;
  }
  output.finishedRequestIds = std::move(finishedSinceLastStep_);
  finishedSinceLastStep_.clear();
  return output;
}

void Scheduler::scheduleRunning(std::vector<Scheduled> &scheduled,
                                size_t &budget, SchedulerOutput &output) {
  // In policy order the tail is the cheapest to lose, and it is scheduled
  // last, so a victim is never one this step already scheduled.
  sortByPolicy(running_);
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request *request = running_[i];
    size_t gap = request->numTokensWithSpec() - request->numComputedTokens;
    size_t numNew = std::min(gap, budget);
    if (numNew == 0) {
      ++i;
      continue;
    }
    std::optional<std::vector<BlockId>> blocks;
    while (!(blocks = kvCache_.allocateSlots(
                 request->requestId, request->numComputedTokens, numNew))) {
      Request *victim = running_.back();
      preempt(victim, output);
      if (victim == request)
        break;
    }
    if (!blocks)
      return;
    scheduled.push_back({request, numNew, request->numComputedTokens,
                         /*isNew=*/false, std::move(*blocks)});
    budget -= numNew;
    ++i;
  }
}

std::optional<ComputedBlocks> Scheduler::adoptableBlocks(Request &request) {
  ComputedBlocks cached = kvCache_.findCachedPrefix(
      request.requestId, request.allTokenIds, request.cacheSalt);
  if (!request.shareSource)
    return cached;
  const Request *source = lookup(*request.shareSource);
  if (!source)
    return cached; // Finished already: nothing left to share.
  size_t blockSize = kvCache_.blockSize();
  // The prompt is shared; the last token is always computed.
  size_t shareable =
      std::min(request.numPromptTokens(), request.numTokens() - 1) / blockSize *
      blockSize;
  if (shareable <= cached.numTokens)
    return cached;
  // Until the source has computed the prompt in an earlier step, starting
  // would duplicate the prompt's KV; waiting costs one step.
  if (source->status != RequestStatus::Running ||
      source->numComputedTokens < shareable)
    return std::nullopt;
  return kvCache_.sharedPrefixOf(source->requestId, shareable);
}

void Scheduler::scheduleWaiting(std::vector<Scheduled> &scheduled,
                                size_t &budget) {
  sortByPolicy(waiting_);
  for (size_t j = 0; j < waiting_.size() && budget > 0 &&
                     running_.size() < config_.maxNumSeqs;) {
    Request *request = waiting_[j];
    std::optional<ComputedBlocks> computed = adoptableBlocks(*request);
    if (!computed) {
      ++j;
      continue;
    }
    size_t numNew = request->numTokens() - computed->numTokens;
    if (!config_.enableChunkedPrefill && numNew > budget)
      return;
    numNew = std::min(numNew, budget);
    if (!capacity_->canAdmit(*request, *computed, running_, kvCache_))
      return;
    std::optional<std::vector<BlockId>> blocks = kvCache_.allocateSlots(
        request->requestId, computed->numTokens, numNew, *computed);
    if (!blocks)
      return;
    waiting_.erase(waiting_.begin() + j);
    running_.push_back(request);
    request->status = RequestStatus::Running;
    request->numComputedTokens = computed->numTokens;
    scheduled.push_back({request, numNew, computed->numTokens,
                         /*isNew=*/true, std::move(*blocks)});
    budget -= numNew;
  }
}

void Scheduler::preempt(Request *request, SchedulerOutput &output) {
  assert(running_.back() == request && "preempt the tail in policy order");
  running_.pop_back();
  kvCache_.freeRequest(request->requestId);
  request->status = RequestStatus::Preempted;
  request->numComputedTokens = 0;
  request->numTokensSent = 0;
  request->specTokenIds.clear();
  ++request->numPreemptions;
  ++numPreemptions_;
  waiting_.push_back(request);
  output.preemptedRequestIds.push_back(request->requestId);
}

bool Scheduler::appendAndCheckStop(Request &request, TokenId token) {
  request.appendOutputToken(token);
  FinishReason reason = FinishReason::None;
  if (request.numOutputTokens() >= request.maxTokens ||
      request.numTokens() >= config_.maxModelLen) {
    reason = FinishReason::Length;
  } else if (!request.samplingParams.ignoreEos && config_.eosTokenId &&
             token == *config_.eosTokenId) {
    reason = FinishReason::Stop;
  } else {
    const std::vector<TokenId> &stops = request.samplingParams.stopTokenIds;
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
      reason = FinishReason::Stop;
      request.stopTokenId = token;
    }
  }
  request.finishReason = reason;
  return reason != FinishReason::None;
}

std::vector<RequestOutput>
Scheduler::updateFromOutput(const SchedulerOutput &output,
                            const ModelRunnerOutput &result) {
  std::unordered_map<RequestId, const RunnerRequestOutput *> byId;
  for (const RunnerRequestOutput &entry : result.outputs)
    byId.emplace(entry.requestId, &entry);

  std::vector<RequestOutput> outputs;
  auto handle = [&](const RequestId &id) {
    Request *request = lookup(id);
    // Aborted since the step was scheduled.
    if (!request || request->status != RequestStatus::Running)
      return;
    auto specIt = output.scheduledSpecDecodeTokens.find(id);
    size_t numSpec = specIt == output.scheduledSpecDecodeTokens.end()
                         ? 0
                         : specIt->second.size();
    request->specTokenIds.clear();
    auto it = byId.find(id);
    if (it != byId.end() && !it->second->error.empty()) {
      // This request's step failed (non-finite logits). It ends here, as
      // an abort does, freeing its blocks at once; what this step computed
      // is not put in the prefix cache, where it could poison other
      // requests. Nothing else in the batch is touched.
      RequestOutput news;
      news.requestId = id;
      news.finished = true;
      news.finishReason = FinishReason::Error;
      news.error = it->second->error;
      finish(request, FinishReason::Error);
      outputs.push_back(std::move(news));
      return;
    }
    const RunnerRequestOutput *sampled =
        it == byId.end() || it->second->sampledTokenIds.empty() ? nullptr
                                                                : it->second;
    bool wantsToken = request->numComputedTokens >= request->numTokens();
    if (wantsToken && sampled) {
      // Accepted drafts plus one bonus token; the rest were rejected and
      // their KV slots get overwritten later.
      size_t numRejected =
          numSpec + 1 - std::min(numSpec + 1, sampled->sampledTokenIds.size());
      request->numComputedTokens -= numRejected;
    } else if (wantsToken) {
      // The executor produced no token for a row that needed one: recompute
      // the last token next step rather than stall.
      request->numComputedTokens = request->numTokens() - 1;
    }
    if (!wantsToken || !sampled) {
      kvCache_.cacheComputedBlocks(id, request->allTokenIds,
                                   request->numComputedTokens,
                                   request->cacheSalt);
      return;
    }

    RequestOutput news;
    news.requestId = id;
    const std::vector<TokenId> &tokens = sampled->sampledTokenIds;
    for (size_t k = 0; k < tokens.size(); ++k) {
      news.newTokenIds.push_back(tokens[k]);
      if (k < sampled->logprobs.size())
        news.newLogprobs.push_back(sampled->logprobs[k]);
      if (appendAndCheckStop(*request, tokens[k])) {
        news.finished = true;
        break;
      }
    }
    // After the kept drafts joined the tokens, so that the blocks they
    // filled are cacheable now; before any block can go back to the pool,
    // so that a finished request's history stays findable (a
    // conversation's next turn).
    kvCache_.cacheComputedBlocks(id, request->allTokenIds,
                                 request->numComputedTokens,
                                 request->cacheSalt);
    if (news.finished) {
      news.finishReason = request->finishReason;
      news.stopTokenId = request->stopTokenId;
      finish(request, request->finishReason);
    }
    outputs.push_back(std::move(news));
  };
  for (const NewRequestData &data : output.scheduledNewRequests)
    handle(data.requestId);
  for (const CachedRequestData &data : output.scheduledCachedRequests)
    handle(data.requestId);
  return outputs;
}
