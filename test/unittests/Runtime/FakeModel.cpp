//===- FakeModel.cpp - A deterministic stand-in for the executor ----------===//

#include "test/unittests/Runtime/FakeModel.h"

#include "runtime/Sampler/Sampler.h"

#include <algorithm>

using namespace folio;
using namespace folio::test;

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  return h;
}

std::vector<float> logitsFromHash(uint64_t h, size_t vocabSize) {
  std::vector<float> logits(vocabSize);
  for (size_t v = 0; v < vocabSize; ++v)
    logits[v] = static_cast<float>((mix(h, v) >> 40) % 1000) / 100.0f;
  return logits;
}

constexpr uint64_t kContextSeed = 0x1234567ULL;

} // namespace

FakeModel::FakeModel(size_t numBlocks, size_t blockSize, size_t vocabSize)
    : numBlocks_(numBlocks), blockSize_(blockSize), vocabSize_(vocabSize),
      cache_(numBlocks * blockSize) {}

std::vector<float>
FakeModel::logitsFor(const std::vector<TokenId> &tokens) const {
  uint64_t h = kContextSeed;
  for (TokenId token : tokens)
    h = mix(h, static_cast<uint64_t>(token));
  return logitsFromHash(h, vocabSize_);
}

int64_t FakeModel::slotOf(const RunnerRequest &request, size_t position) {
  size_t index = position / blockSize_;
  if (index >= request.blockTable.size()) {
    error("position " + std::to_string(position) + " has no block");
    return -1;
  }
  BlockId block = request.blockTable[index];
  if (block <= kNullBlockId || static_cast<size_t>(block) >= numBlocks_) {
    error("invalid block id " + std::to_string(block));
    return -1;
  }
  return static_cast<int64_t>(block * blockSize_ + position % blockSize_);
}

std::vector<float> FakeModel::logitsFromCache(const RunnerRequest &request,
                                              size_t lastPosition) {
  uint64_t h = kContextSeed;
  for (size_t p = 0; p <= lastPosition; ++p) {
    int64_t slot = slotOf(request, p);
    if (slot < 0)
      return logitsFromHash(0, vocabSize_);
    const Slot &entry = cache_[slot];
    if (entry.position != static_cast<int64_t>(p) ||
        (p < request.tokens.size() && entry.token != request.tokens[p]))
      error("KV slot for position " + std::to_string(p) + " holds position " +
            std::to_string(entry.position) + " token " +
            std::to_string(entry.token));
    h = mix(h, static_cast<uint64_t>(entry.token));
  }
  return logitsFromHash(h, vocabSize_);
}

ModelRunnerOutput FakeModel::execute(const SchedulerOutput &output) {
  for (const std::vector<RequestId> *ids :
       {&output.finishedRequestIds, &output.preemptedRequestIds})
    for (const RequestId &id : *ids)
      requests_.erase(id);

  struct Work {
    RunnerRequest *request;
    RequestId id;
    size_t start;
    size_t count;
    std::vector<TokenId> spec;
  };
  std::vector<Work> work;
  auto scheduledCount = [&](const RequestId &id) -> size_t {
    auto it = output.numScheduledTokens.find(id);
    if (it == output.numScheduledTokens.end()) {
      error(id + " is scheduled without a token count");
      return 0;
    }
    return it->second;
  };
  for (const NewRequestData &data : output.scheduledNewRequests) {
    if (requests_.count(data.requestId))
      error(data.requestId + " sent as new but already known");
    RunnerRequest &request = requests_[data.requestId];
    request.promptTokenIds = data.promptTokenIds;
    request.tokens = data.promptTokenIds;
    request.tokens.insert(request.tokens.end(), data.outputTokenIds.begin(),
                          data.outputTokenIds.end());
    request.blockTable = data.blockIds;
    request.params = data.samplingParams;
    request.seed = data.seed;
    work.push_back({&request,
                    data.requestId,
                    data.numComputedTokens,
                    scheduledCount(data.requestId),
                    {}});
  }
  for (const CachedRequestData &data : output.scheduledCachedRequests) {
    auto it = requests_.find(data.requestId);
    if (it == requests_.end()) {
      error(data.requestId + " sent as a diff but unknown");
      continue;
    }
    RunnerRequest &request = it->second;
    request.tokens.insert(request.tokens.end(), data.newTokenIds.begin(),
                          data.newTokenIds.end());
    request.blockTable.insert(request.blockTable.end(),
                              data.newBlockIds.begin(), data.newBlockIds.end());
    work.push_back({&request,
                    data.requestId,
                    data.numComputedTokens,
                    scheduledCount(data.requestId),
                    {}});
  }
  for (Work &w : work) {
    auto it = output.scheduledSpecDecodeTokens.find(w.id);
    if (it != output.scheduledSpecDecodeTokens.end())
      w.spec = it->second;
    if (w.count == 0)
      error(w.id + ": scheduled with no tokens to compute");
    if (w.start + w.count > w.request->tokens.size() + w.spec.size())
      error(w.id + ": more tokens scheduled than known");
    if (!w.spec.empty() &&
        w.start + w.count != w.request->tokens.size() + w.spec.size())
      error(w.id + ": drafts scheduled but not all real tokens");
  }

  // Every KV write of the step lands before any read, as kv_write precedes
  // paged_attention in each layer of the compiled forward.
  for (const Work &w : work) {
    for (size_t p = w.start; p < w.start + w.count; ++p) {
      int64_t slot = slotOf(*w.request, p);
      if (slot < 0)
        continue;
      size_t known = w.request->tokens.size();
      TokenId token = p < known ? w.request->tokens[p] : w.spec.at(p - known);
      cache_[slot] = {token, static_cast<int64_t>(p)};
    }
  }

  ModelRunnerOutput result;
  for (const Work &w : work) {
    RunnerRequest &request = *w.request;
    size_t known = request.tokens.size();
    if (w.start + w.count < known)
      continue; // A prompt chunk: no logits row.
    RunnerRequestOutput out;
    out.requestId = w.id;
    std::vector<TokenId> outputTokens(request.tokens.begin() +
                                          request.promptTokenIds.size(),
                                      request.tokens.end());
    for (size_t k = 0; k <= w.spec.size(); ++k) {
      size_t position = known - 1 + k;
      std::vector<float> logits = logitsFromCache(request, position);
      SampleRow row{&request.params, &request.promptTokenIds, &outputTokens,
                    request.seed, position + 1};
      Expected<SampledToken> token = sampleRow(logits.data(), vocabSize_, row);
      if (!token) {
        error(w.id + ": " + token.status().message());
        break;
      }
      out.sampledTokenIds.push_back(token->token);
      if (token->hasLogprobs)
        out.logprobs.push_back(token->logprobs);
      outputTokens.push_back(token->token);
      if (k == w.spec.size())
        break;
      if (w.spec[k] != token->token) {
        numRejected_ += w.spec.size() - k;
        break;
      }
      ++numAccepted_;
    }
    result.outputs.push_back(std::move(out));
  }
  return result;
}
