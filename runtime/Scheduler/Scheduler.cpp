//===- Scheduler.cpp - Requests in and out of the scheduler ---------------===//
//
// Admission, abort and bookkeeping; the per-step logic is in
// SchedulerStep.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/Scheduler/Scheduler.h"

#include <algorithm>
#include <cassert>
#include <string>

using namespace folio;

namespace {

/// SplitMix64: spreads consecutive arrival indices over the seed space.
uint64_t mixSeed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

void eraseValue(std::vector<Request *> &list, Request *request) {
  auto it = std::find(list.begin(), list.end(), request);
  if (it != list.end())
    list.erase(it);
}

} // namespace

Expected<std::unique_ptr<Scheduler>>
Scheduler::create(const SchedulerConfig &config,
                  const KVCacheConfig &kvCacheConfig) {
  if (Status status = config.validate(kvCacheConfig); !status)
    return status;
  return std::unique_ptr<Scheduler>(new Scheduler(config, kvCacheConfig));
}

Scheduler::Scheduler(const SchedulerConfig &config,
                     const KVCacheConfig &kvCacheConfig)
    : config_(config), kvCache_(kvCacheConfig),
      ordering_(createOrderingPolicy(config.ordering)),
      capacity_(createCapacityPolicy(config.capacity)) {}

Request *Scheduler::lookup(const RequestId &requestId) const {
  auto it = requests_.find(requestId);
  return it == requests_.end() ? nullptr : it->second.get();
}

const Request *Scheduler::findRequest(const RequestId &requestId) const {
  return lookup(requestId);
}

Status Scheduler::validateRequest(const NewRequest &request) const {
  const std::string &id = request.requestId;
  if (id.empty())
    return Status::invalidArgument("request id must not be empty");
  if (requests_.count(id) || samples_.count(id))
    return Status::alreadyExists("request id '" + id + "' is already in use");
  const SamplingParams &params = request.samplingParams;
  if (Status status = params.validate(config_.vocabSize); !status)
    return Status::invalidArgument("request '" + id + "': " + status.message());
  size_t promptLen = request.promptTokenIds.size();
  if (promptLen == 0)
    return Status::invalidArgument("request '" + id +
                                   "': the prompt must not be empty");
  for (TokenId token : request.promptTokenIds)
    if (token < 0 ||
        (config_.vocabSize && static_cast<size_t>(token) >= config_.vocabSize))
      return Status::invalidArgument("request '" + id + "': prompt token " +
                                     std::to_string(token) +
                                     " is outside the vocabulary");
  size_t maxLen = config_.maxModelLen;
  if (promptLen >= maxLen)
    return Status::invalidArgument(
        "request '" + id + "': the prompt has " + std::to_string(promptLen) +
        " tokens but the model's maximum context length is " +
        std::to_string(maxLen) + ", leaving no room to generate");
  if (params.maxTokens && promptLen + *params.maxTokens > maxLen)
    return Status::invalidArgument(
        "request '" + id + "': the model's maximum context length is " +
        std::to_string(maxLen) + " tokens, but " +
        std::to_string(promptLen + *params.maxTokens) + " were requested (" +
        std::to_string(promptLen) + " in the prompt, " +
        std::to_string(*params.maxTokens) + " for the completion)");
  if (params.n > 1)
    for (int32_t i = 0; i < params.n; ++i)
      if (requests_.count(id + "#" + std::to_string(i)))
        return Status::alreadyExists("request id '" + id + "#" +
                                     std::to_string(i) + "' is in use");
  return Status::ok();
}

Status Scheduler::addRequest(const NewRequest &newRequest) {
  if (Status status = validateRequest(newRequest); !status)
    return status;
  const SamplingParams &params = newRequest.samplingParams;
  int32_t numSamples = params.n;
  std::optional<RequestId> firstSample;
  for (int32_t i = 0; i < numSamples; ++i) {
    auto request = std::make_unique<Request>();
    request->requestId = numSamples == 1
                             ? newRequest.requestId
                             : newRequest.requestId + "#" + std::to_string(i);
    request->samplingParams = params;
    request->samplingParams.n = 1;
    request->priority = newRequest.priority;
    request->cacheSalt = newRequest.cacheSalt;
    request->arrivalIndex = nextArrivalIndex_++;
    uint64_t baseSeed =
        params.seed ? *params.seed
                    : mixSeed(config_.seed ^ mixSeed(request->arrivalIndex));
    request->seed = baseSeed + static_cast<uint64_t>(i);
    size_t promptLen = newRequest.promptTokenIds.size();
    request->maxTokens =
        params.maxTokens.value_or(config_.maxModelLen - promptLen);
    request->promptTokenIds = newRequest.promptTokenIds;
    request->allTokenIds = newRequest.promptTokenIds;
    request->shareSource = firstSample;
    if (numSamples > 1) {
      request->parentRequestId = newRequest.requestId;
      samples_[newRequest.requestId].push_back(request->requestId);
      if (!firstSample)
        firstSample = request->requestId;
    }
    waiting_.push_back(request.get());
    requests_.emplace(request->requestId, std::move(request));
  }
  return Status::ok();
}

Status Scheduler::abortRequest(const RequestId &requestId) {
  if (Request *request = lookup(requestId)) {
    finish(request, FinishReason::Abort);
    return Status::ok();
  }
  auto it = samples_.find(requestId);
  if (it == samples_.end())
    return Status::notFound("no unfinished request '" + requestId + "'");
  // finish() edits the sample list, so walk a copy.
  std::vector<RequestId> ids = it->second;
  for (const RequestId &id : ids)
    finish(lookup(id), FinishReason::Abort);
  return Status::ok();
}

Status Scheduler::setSpeculativeTokens(const RequestId &requestId,
                                       std::vector<TokenId> draftTokenIds) {
  Request *request = lookup(requestId);
  if (!request)
    return Status::notFound("no unfinished request '" + requestId + "'");
  if (request->status != RequestStatus::Running)
    return Status::invalidArgument("request '" + requestId +
                                   "' is not running");
  // Drafts past the maximum length could never be kept, and would make
  // the request need blocks beyond what admission accounted for.
  size_t room = request->maxTotalTokens() - request->numTokens();
  if (draftTokenIds.size() > room)
    draftTokenIds.resize(room);
  request->specTokenIds = std::move(draftTokenIds);
  return Status::ok();
}

void Scheduler::finish(Request *request, FinishReason reason) {
  assert(request && !request->isFinished() && "finishing twice");
  eraseValue(running_, request);
  eraseValue(waiting_, request);
  kvCache_.freeRequest(request->requestId);
  request->status = RequestStatus::Finished;
  request->finishReason = reason;
  finishedSinceLastStep_.push_back(request->requestId);

  // A copy: erasing the request destroys its own id.
  RequestId id = request->requestId;
  if (request->parentRequestId) {
    auto it = samples_.find(*request->parentRequestId);
    assert(it != samples_.end() && "sample of an unknown parallel request");
    std::vector<RequestId> &ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty())
      samples_.erase(it);
  }
  requests_.erase(id);
}

void Scheduler::sortByPolicy(std::vector<Request *> &requests) const {
  std::stable_sort(requests.begin(), requests.end(),
                   [&](const Request *a, const Request *b) {
                     return ordering_->precedes(*a, *b);
                   });
}

Status Scheduler::checkInvariants() const {
  if (running_.size() > config_.maxNumSeqs)
    return Status::internal("more running requests than max-num-seqs");
  if (running_.size() + waiting_.size() != requests_.size())
    return Status::internal("a request is neither running nor waiting");
  for (const Request *request : running_) {
    if (request->status != RequestStatus::Running)
      return Status::internal(request->requestId + " runs but is not Running");
    size_t held = kvCache_.blockIds(request->requestId).size();
    if (held < kvCache_.blocksForTokens(request->numComputedTokens))
      return Status::internal(request->requestId +
                              " has computed tokens without blocks");
    if (request->numComputedTokens > request->numTokensWithSpec() ||
        request->numTokens() > config_.maxModelLen)
      return Status::internal(request->requestId + " is longer than allowed");
  }
  for (const Request *request : waiting_) {
    if (request->status != RequestStatus::Waiting &&
        request->status != RequestStatus::Preempted)
      return Status::internal(request->requestId + " waits but is not");
    if (!kvCache_.blockIds(request->requestId).empty() ||
        request->numComputedTokens != 0)
      return Status::internal(request->requestId + " waits holding blocks");
  }
  return kvCache_.checkInvariants();
}
