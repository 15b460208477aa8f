//===- NumericGuardTest.cpp - Non-finite logits fail one request ----------===//
//
// The serving engine (scheduler, model runner, sampler) over a fake executor
// that keeps a paged cache of (token, position) slots and answers each
// logits row with a hash of the context it reads back through the block
// table, so a row depends on its own request alone. A fault poisons one
// request's row once: NaN, +inf or an all -inf row must end that request
// with FinishReason::Error, free its blocks at once and leave every other
// request's tokens exactly as in a run without it; -inf entries in a row
// that keeps finite ones are masked tokens and sample normally.
//
//===----------------------------------------------------------------------===//

#include "runtime/Core/Engine.h"
#include "runtime/Core/ServingEngine.h"
#include "runtime/Sampler/Sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace folio;

namespace {

constexpr int64_t kBlockSize = 4;
constexpr int64_t kVocab = 64;
constexpr size_t kNewTokens = 6;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  return h;
}

/// The logits after `context`, finite, in [0, 10).
std::vector<float> logitsFor(const std::vector<TokenId> &context) {
  uint64_t h = 0x1234567ULL;
  for (TokenId t : context)
    h = mix(h, uint64_t(t));
  std::vector<float> row(kVocab);
  for (int64_t v = 0; v < kVocab; ++v)
    row[v] = float((mix(h, uint64_t(v)) >> 40) % 1000) / 100.0f;
  return row;
}

/// Poisons, once, the row of the request whose prompt starts with
/// `firstToken` when it samples output token `outputToken`.
struct Fault {
  TokenId firstToken = -1;
  size_t promptLen = 0;
  size_t outputToken = 0;
  /// Entries to set, and the value; all entries when empty.
  std::vector<int64_t> entries;
  float value = 0;
};

class FakeExecutor : public exec::Executor {
public:
  explicit FakeExecutor(std::vector<Fault> faults)
      : faults(std::move(faults)) {}

  const char *deviceName() const override { return "fake"; }
  Status load(std::shared_ptr<const plan::Plan>) override {
    return Status::ok();
  }
  exec::KVCacheLayout kvCacheLayout() const override {
    exec::KVCacheLayout l;
    l.numLayers = 1;
    l.blockSize = kBlockSize;
    l.bytesPerBlock = l.bytesPerBlock16 = 8 * kBlockSize;
    return l;
  }
  Status allocateKVCache(int64_t numBlocks) override {
    slots.assign(size_t(numBlocks * kBlockSize), {-1, -1});
    return Status::ok();
  }

  Status forward(const exec::ForwardBatch &b, std::vector<float> &logits,
                 int64_t &vocab) override {
    for (size_t t = 0; t < b.tokens.size(); ++t)
      slots.at(size_t(b.slotMapping[t])) = {b.tokens[t], b.positions[t]};
    vocab = kVocab;
    logits.clear();
    for (int32_t t : b.logitsIndices) {
      size_t s = 0;
      while (b.queryStartLoc[s + 1] <= t)
        ++s;
      std::vector<TokenId> context;
      for (int32_t p = 0; p <= b.positions[t]; ++p) {
        int32_t block = b.blockTables[s * size_t(b.maxBlocks) + p / kBlockSize];
        auto [token, position] =
            slots.at(size_t(block * kBlockSize) + size_t(p % kBlockSize));
        if (position != p)
          return Status::internal("slot holds the wrong position");
        context.push_back(token);
      }
      std::vector<float> row = logitsFor(context);
      for (auto it = faults.begin(); it != faults.end(); ++it) {
        if (context[0] != it->firstToken ||
            context.size() != it->promptLen + it->outputToken)
          continue;
        if (it->entries.empty())
          std::fill(row.begin(), row.end(), it->value);
        for (int64_t e : it->entries)
          row[size_t(e)] = it->value;
        faults.erase(it);
        break;
      }
      logits.insert(logits.end(), row.begin(), row.end());
    }
    return Status::ok();
  }

  /// Greedy tokens "on the device": the argmax of what forward gives, -1
  /// for a row the sampler would refuse, as the CUDA executor's sampler.
  bool greedyOnDevice() const override { return onDevice; }
  Status forwardGreedy(const exec::ForwardBatch &b, std::vector<int32_t> &ids,
                       int64_t &vocab) override {
    ++greedyCalls;
    std::vector<float> logits;
    if (Status s = forward(b, logits, vocab); !s)
      return s;
    ids.clear();
    for (size_t r = 0; r < b.logitsIndices.size(); ++r) {
      const float *row = logits.data() + r * size_t(vocab);
      ids.push_back(checkLogitsRow(row, size_t(vocab)).ok()
                        ? firstMaximum(row, size_t(vocab))
                        : -1);
    }
    return Status::ok();
  }
  /// Draws "on the device": runtime/Sampler's processLogits (penalties
  /// from the row's lists) and drawProcessed with the row's parameters and
  /// the engine's uniform, or argmaxProcessed for a row of temperature 0,
  /// as the CUDA sampler does; then the logprobs the row asks for.
  bool samplesOnDevice() const override { return onDevice; }
  bool penalizesOnDevice() const override { return onDevice && penalizes; }
  bool logprobsOnDevice() const override { return onDevice && reportsLogprobs; }
  Status forwardSampled(const exec::ForwardBatch &b,
                        const std::vector<exec::DeviceDraw> &draws,
                        std::vector<int32_t> &ids,
                        std::vector<exec::DeviceLogprobs> &logprobs,
                        int64_t &vocab) override {
    ++drawCalls;
    std::vector<float> logits;
    if (Status s = forward(b, logits, vocab); !s)
      return s;
    ids.clear();
    logprobs.assign(draws.size(), {});
    for (size_t r = 0; r < draws.size(); ++r) {
      const float *row = logits.data() + r * size_t(vocab);
      const exec::DeviceDraw &d = draws[r];
      greedyRows += d.temperature == 0.0f;
      penalizedRows += d.penalized();
      logprobRows += d.logprobs >= 0;
      SamplingParams params;
      params.temperature = d.temperature;
      params.topK = d.topK;
      params.topP = d.topP;
      params.minP = d.minP;
      params.repetitionPenalty = d.repetitionPenalty;
      params.frequencyPenalty = d.frequencyPenalty;
      params.presencePenalty = d.presencePenalty;
      // The history the penalty lists stand for: each token's output
      // count, and the prompt's other tokens once.
      std::vector<TokenId> prompt, output;
      for (size_t i = 0; i < d.penaltyTokens.size(); ++i) {
        for (int32_t n = 0; n < d.penaltyCounts[i]; ++n)
          output.push_back(d.penaltyTokens[i]);
        if (d.penaltyCounts[i] == 0)
          prompt.push_back(d.penaltyTokens[i]);
      }
      SampleRow sr{&params, &prompt, &output, 0, 0};
      Expected<std::vector<double>> processed =
          processLogits(row, size_t(vocab), sr);
      if (!processed) {
        ids.push_back(-1);
        continue;
      }
      const TokenId t = params.isGreedy()
                            ? argmaxProcessed(*processed)
                            : drawProcessed(*processed, d.uniform);
      ids.push_back(t);
      if (d.logprobs < 0)
        continue;
      // Converted as the device reports them, so that the engine's
      // conversion back is what is tested.
      TokenLogprobs l = logprobsProcessed(*processed, t, d.logprobs);
      logprobs[r].logprob = l.logprob;
      for (const auto &[token, value] : l.top) {
        logprobs[r].topTokens.push_back(token);
        logprobs[r].topLogprobs.push_back(value);
      }
    }
    return Status::ok();
  }
  bool onDevice = false;
  bool penalizes = true, reportsLogprobs = false;
  int greedyCalls = 0, drawCalls = 0, greedyRows = 0, penalizedRows = 0,
      logprobRows = 0;

private:
  std::vector<Fault> faults;
  std::vector<std::pair<TokenId, int32_t>> slots;
};

std::unique_ptr<core::ServingEngine>
makeEngine(std::vector<Fault> faults, bool prefixCaching = false,
           FakeExecutor **executor = nullptr, bool greedyOnDevice = false) {
  SchedulerConfig config;
  config.maxModelLen = 64;
  config.vocabSize = kVocab;
  KVCacheConfig kv;
  kv.numBlocks = 64;
  kv.blockSize = kBlockSize;
  kv.enablePrefixCaching = prefixCaching;
  auto fake = std::make_unique<FakeExecutor>(std::move(faults));
  fake->onDevice = greedyOnDevice;
  if (executor)
    *executor = fake.get();
  auto engine = core::ServingEngine::create(std::make_shared<plan::Plan>(),
                                            std::move(fake), config, kv);
  EXPECT_TRUE(engine) << engine.status().message();
  return std::move(*engine);
}

NewRequest request(const std::string &id, std::vector<TokenId> prompt,
                   float temperature = 0) {
  NewRequest r;
  r.requestId = id;
  r.promptTokenIds = std::move(prompt);
  r.samplingParams.temperature = temperature;
  r.samplingParams.seed = 7;
  r.samplingParams.maxTokens = kNewTokens;
  r.samplingParams.ignoreEos = true;
  return r;
}

const NewRequest kBad = request("bad", {40, 1, 2, 3, 4, 5, 6, 7, 8});
std::vector<NewRequest> others() {
  return {request("a", {11, 12, 13}), request("b", {21, 22, 23, 24, 25}),
          request("c", {31}, /*temperature=*/0.8f)};
}

struct Served {
  std::map<std::string, std::vector<TokenId>> tokens;
  std::map<std::string, std::vector<TokenLogprobs>> logprobs;
  std::map<std::string, RequestOutput> finished;
  /// Free KV blocks after each step.
  std::vector<size_t> freeBlocks;
};

/// Steps `engine` to completion, checking the scheduler after each step.
Served serve(core::ServingEngine &engine,
             const std::vector<NewRequest> &requests) {
  for (const NewRequest &r : requests)
    EXPECT_TRUE(engine.addRequest(r)) << r.requestId;
  Served served;
  while (engine.hasUnfinishedRequests()) {
    Expected<std::vector<RequestOutput>> outs = engine.step();
    if (!outs) {
      ADD_FAILURE() << outs.status().message();
      break;
    }
    for (const RequestOutput &o : *outs) {
      auto &t = served.tokens[o.requestId];
      t.insert(t.end(), o.newTokenIds.begin(), o.newTokenIds.end());
      auto &l = served.logprobs[o.requestId];
      l.insert(l.end(), o.newLogprobs.begin(), o.newLogprobs.end());
      if (o.finished)
        served.finished[o.requestId] = o;
    }
    served.freeBlocks.push_back(
        engine.getScheduler().kvCache().numFreeBlocks());
    EXPECT_TRUE(engine.getScheduler().checkInvariants());
  }
  return served;
}

Served clean() {
  auto engine = makeEngine({});
  return serve(*engine, others());
}

/// One request's fault at output token 2 (engine step 2: everything
/// prefills in step 0 and decodes one token per step).
void expectFailsAlone(Fault fault, const std::string &message) {
  Served reference = clean();
  fault.firstToken = kBad.promptTokenIds[0];
  fault.promptLen = kBad.promptTokenIds.size();
  fault.outputToken = 2;
  auto engine = makeEngine({fault});
  std::vector<NewRequest> requests = others();
  requests.push_back(kBad);
  Served served = serve(*engine, requests);

  ASSERT_TRUE(served.finished.count("bad"));
  const RequestOutput &bad = served.finished["bad"];
  EXPECT_EQ(bad.finishReason, FinishReason::Error);
  EXPECT_STREQ(finishReasonName(bad.finishReason), "error");
  EXPECT_EQ(bad.error, message);
  EXPECT_TRUE(bad.newTokenIds.empty());
  EXPECT_EQ(served.tokens["bad"].size(), 2u);
  // Its blocks went back in the step that found the fault: from then on
  // the pool looks exactly as in the run that never had it.
  ASSERT_GE(served.freeBlocks.size(), 3u);
  ASSERT_EQ(served.freeBlocks.size(), reference.freeBlocks.size());
  for (size_t s = 2; s < served.freeBlocks.size(); ++s)
    EXPECT_EQ(served.freeBlocks[s], reference.freeBlocks[s]) << "step " << s;
  EXPECT_LT(served.freeBlocks[1], reference.freeBlocks[1]);
  const BlockPool &pool = engine->getScheduler().kvCache().pool();
  EXPECT_EQ(pool.numFreeBlocks(), pool.numUsableBlocks());
  for (const NewRequest &r : others()) {
    EXPECT_EQ(served.tokens[r.requestId], reference.tokens[r.requestId])
        << r.requestId;
    EXPECT_EQ(served.finished[r.requestId].finishReason, FinishReason::Length);
    EXPECT_TRUE(served.finished[r.requestId].error.empty());
  }
}

} // namespace

TEST(NumericGuard, NaNFailsOnlyThatRequest) {
  Fault f;
  f.entries = {3, 9};
  f.value = std::nanf("");
  expectFailsAlone(f, "logits of request 'bad' hold NaN (entry 3) at step 2, "
                      "output token 2");
}

TEST(NumericGuard, NegativeNaNIsNaN) {
  Fault f;
  f.entries = {5};
  f.value = -std::nanf("");
  expectFailsAlone(f, "logits of request 'bad' hold NaN (entry 5) at step 2, "
                      "output token 2");
}

TEST(NumericGuard, PosInfFailsOnlyThatRequest) {
  Fault f;
  f.entries = {17};
  f.value = INFINITY;
  expectFailsAlone(f, "logits of request 'bad' hold +inf (entry 17) at step "
                      "2, output token 2");
}

TEST(NumericGuard, AllNegInfRowFailsOnlyThatRequest) {
  Fault f;
  f.value = -INFINITY;
  expectFailsAlone(f, "logits of request 'bad' hold only -inf at step 2, "
                      "output token 2");
}

// Where the executor takes greedy tokens on its device (a GPU), a faulty
// row fails its request alone as well, and the others' tokens are the
// host sampler's. A step where some request wants more than the argmax
// (penalties here) brings the logits back instead.
TEST(NumericGuard, GreedyTokensTakenOnTheDeviceFailOnlyThatRequest) {
  std::vector<NewRequest> greedy = {request("a", {11, 12, 13}),
                                    request("b", {21, 22, 23, 24, 25})};
  Served reference = serve(*makeEngine({}), greedy);
  Fault fault;
  fault.entries = {3};
  fault.value = std::nanf("");
  fault.firstToken = kBad.promptTokenIds[0];
  fault.promptLen = kBad.promptTokenIds.size();
  fault.outputToken = 2;
  FakeExecutor *fake = nullptr;
  auto engine = makeEngine({fault}, false, &fake, /*greedyOnDevice=*/true);
  std::vector<NewRequest> requests = greedy;
  requests.push_back(kBad);
  Served served = serve(*engine, requests);
  EXPECT_GT(fake->greedyCalls, 0);
  ASSERT_TRUE(served.finished.count("bad"));
  EXPECT_EQ(served.finished["bad"].error,
            "logits of request 'bad' hold NaN or +inf, or only -inf (its token "
            "was sampled on the device) at step 2, output token 2");
  EXPECT_EQ(served.tokens["bad"].size(), 2u);
  for (const NewRequest &r : greedy)
    EXPECT_EQ(served.tokens[r.requestId], reference.tokens[r.requestId])
        << r.requestId;

  // A greedy request with a penalty is no plain argmax: it goes through
  // the draw sampler's penalties where the executor applies them, else
  // its logits come back.
  for (bool penalizes : {true, false}) {
    engine = makeEngine({}, false, &fake, /*greedyOnDevice=*/true);
    fake->penalizes = penalizes;
    requests = greedy;
    requests.back().samplingParams.repetitionPenalty = 1.3f;
    serve(*engine, requests);
    EXPECT_EQ(fake->greedyCalls, 0);
    EXPECT_EQ(fake->drawCalls > 0, penalizes);
  }
}

// Seeded draws with temperature, min-p, top-k and top-p taken on the
// device use the uniform the host sampler would: the same tokens, with a
// greedy row beside them and with penalties. A faulty row fails its
// request alone; logprobs, or penalties the executor cannot apply, bring
// the logits back.
TEST(NumericGuard, DrawsTakenOnTheDeviceAreTheHostSamplersDraws) {
  std::vector<NewRequest> drawn = {request("a", {11, 12, 13}, 0.8f),
                                   request("b", {21, 22, 23, 24, 25}, 1.3f)};
  drawn[0].samplingParams.topK = 5;
  drawn[1].samplingParams.topP = 0.7f;
  Served reference = serve(*makeEngine({}), drawn);
  Fault fault;
  fault.entries = {3};
  fault.value = INFINITY;
  fault.firstToken = kBad.promptTokenIds[0];
  fault.promptLen = kBad.promptTokenIds.size();
  fault.outputToken = 2;
  FakeExecutor *fake = nullptr;
  auto engine = makeEngine({fault}, false, &fake, /*onDevice=*/true);
  std::vector<NewRequest> requests = drawn;
  requests.push_back(kBad);
  requests.back().samplingParams.temperature = 0.9f;
  Served served = serve(*engine, requests);
  EXPECT_GT(fake->drawCalls, 0);
  EXPECT_EQ(fake->greedyCalls, 0);
  ASSERT_TRUE(served.finished.count("bad"));
  EXPECT_EQ(served.finished["bad"].error,
            "logits of request 'bad' hold NaN or +inf, or only -inf (its token "
            "was sampled on the device) at step 2, output token 2");
  for (const NewRequest &r : drawn)
    EXPECT_EQ(served.tokens[r.requestId], reference.tokens[r.requestId])
        << r.requestId;

  // A greedy request beside the draws, and min-p, are sampled on the
  // device too: the tokens are the host sampler's.
  requests = drawn;
  requests.push_back(request("g", {31}));
  requests.back().samplingParams.temperature = 0.0f;
  requests.push_back(request("m", {41, 42}, 1.1f));
  requests.back().samplingParams.minP = 0.9f; // keeps about one token
  requests.back().samplingParams.topK = 30;
  reference = serve(*makeEngine({}), requests);
  engine = makeEngine({}, false, &fake, /*onDevice=*/true);
  served = serve(*engine, requests);
  EXPECT_GT(fake->drawCalls, 0);
  EXPECT_GT(fake->greedyRows, 0);
  EXPECT_EQ(fake->greedyCalls, 0);
  for (const NewRequest &r : requests)
    EXPECT_EQ(served.tokens[r.requestId], reference.tokens[r.requestId])
        << r.requestId;

  // Penalties too (a greedy request with a repetition penalty, a sampled
  // one with frequency and presence penalties), where the executor applies
  // them; logprobs, and penalties an executor cannot apply, need the host
  // sampler: the logits come back.
  requests = drawn;
  requests[0].samplingParams.repetitionPenalty = 1.4f;
  requests[0].samplingParams.temperature = 0.0f;
  requests[1].samplingParams.frequencyPenalty = 0.8f;
  requests[1].samplingParams.presencePenalty = -0.5f;
  reference = serve(*makeEngine({}), requests);
  engine = makeEngine({}, false, &fake, /*onDevice=*/true);
  served = serve(*engine, requests);
  EXPECT_GT(fake->drawCalls, 0);
  EXPECT_GT(fake->penalizedRows, 0);
  for (const NewRequest &r : requests)
    EXPECT_EQ(served.tokens[r.requestId], reference.tokens[r.requestId])
        << r.requestId;
  for (bool logprobs : {true, false}) {
    engine = makeEngine({}, false, &fake, /*onDevice=*/true);
    fake->penalizes = logprobs;
    requests = drawn;
    if (logprobs)
      requests.back().samplingParams.logprobs = 1;
    else
      requests.back().samplingParams.frequencyPenalty = 0.5f;
    serve(*engine, requests);
    EXPECT_EQ(fake->drawCalls, 0) << logprobs;
    EXPECT_EQ(fake->greedyCalls, 0) << logprobs;
  }
}

// Logprobs are reported from the device where the executor reports them:
// a greedy and a sampled request asking for them, beside one that does
// not, get the host sampler's tokens and logprobs.
TEST(NumericGuard, LogprobsReportedFromTheDeviceAreTheHostSamplers) {
  std::vector<NewRequest> requests = {request("a", {11, 12, 13}, 0.8f),
                                      request("b", {21, 22, 23, 24, 25}),
                                      request("c", {31, 32}, 1.2f)};
  requests[0].samplingParams.topK = 5;
  requests[0].samplingParams.logprobs = 3;
  requests[1].samplingParams.temperature = 0.0f;
  requests[1].samplingParams.logprobs = 0;
  requests[2].samplingParams.topP = 0.8f;
  Served reference = serve(*makeEngine({}), requests);
  FakeExecutor *fake = nullptr;
  auto engine = makeEngine({}, false, &fake, /*onDevice=*/true);
  fake->reportsLogprobs = true;
  Served got = serve(*engine, requests);
  EXPECT_GT(fake->drawCalls, 0);
  EXPECT_GT(fake->logprobRows, 0);
  EXPECT_EQ(fake->greedyCalls, 0);
  for (const NewRequest &r : requests) {
    EXPECT_TRUE(got.finished[r.requestId].error.empty()) << r.requestId;
    EXPECT_EQ(got.tokens[r.requestId], reference.tokens[r.requestId]);
    const auto &want = reference.logprobs[r.requestId],
               &have = got.logprobs[r.requestId];
    ASSERT_EQ(have.size(), want.size()) << r.requestId;
    EXPECT_EQ(want.empty(), !r.samplingParams.logprobs) << r.requestId;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(have[i].logprob, want[i].logprob) << r.requestId << " " << i;
      EXPECT_EQ(have[i].top, want[i].top) << r.requestId << " " << i;
      EXPECT_EQ(want[i].top.size(), size_t(*r.samplingParams.logprobs));
    }
  }
}

// Masked (-inf) entries in a row that keeps finite ones are legitimate:
// greedy takes the best unmasked token, sampling never draws a masked one.
TEST(NumericGuard, NegInfEntriesAreMaskedTokens) {
  Served reference = clean();
  std::vector<Fault> faults;
  std::vector<NewRequest> requests = others();
  for (const NewRequest &r : requests) {
    Fault f;
    f.firstToken = r.promptTokenIds[0];
    f.promptLen = r.promptTokenIds.size();
    f.outputToken = 1;
    f.value = -INFINITY;
    // Mask the token the clean run picked and a few more.
    f.entries = {reference.tokens[r.requestId][1], 0, 1, 2};
    faults.push_back(f);
  }
  auto engine = makeEngine(faults);
  Served served = serve(*engine, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const NewRequest &r = requests[i];
    const std::vector<TokenId> &t = served.tokens[r.requestId];
    EXPECT_EQ(served.finished[r.requestId].finishReason, FinishReason::Length);
    ASSERT_EQ(t.size(), kNewTokens) << r.requestId;
    EXPECT_EQ(t[0], reference.tokens[r.requestId][0]) << r.requestId;
    std::set<int64_t> masked(faults[i].entries.begin(),
                             faults[i].entries.end());
    EXPECT_FALSE(masked.count(t[1])) << r.requestId;
    if (r.samplingParams.temperature == 0) {
      std::vector<TokenId> context = r.promptTokenIds;
      context.push_back(t[0]);
      std::vector<float> row = logitsFor(context);
      for (int64_t e : masked)
        row[size_t(e)] = -INFINITY;
      EXPECT_EQ(t[1], std::max_element(row.begin(), row.end()) - row.begin())
          << r.requestId;
    }
  }
}

// What a failed request computed in its failing step never enters the
// prefix cache, where a later request with the same prompt would adopt it.
TEST(NumericGuard, FailedStepIsNotPrefixCached) {
  Fault f;
  f.firstToken = kBad.promptTokenIds[0];
  f.promptLen = kBad.promptTokenIds.size();
  f.outputToken = 0; // the prefill's row
  f.entries = {0};
  f.value = std::nanf("");
  auto engine = makeEngine({f}, /*prefixCaching=*/true);
  Served first = serve(*engine, {kBad});
  EXPECT_EQ(first.finished["bad"].finishReason, FinishReason::Error);
  EXPECT_EQ(first.finished["bad"].error,
            "logits of request 'bad' hold NaN (entry 0) at step 0, output "
            "token 0");
  NewRequest again = kBad;
  again.requestId = "again";
  Served second = serve(*engine, {again});
  EXPECT_EQ(second.finished["again"].finishReason, FinishReason::Length);
  EXPECT_EQ(engine->getScheduler().kvCache().numPrefixHitTokens(), 0u);
}

// runToCompletion streams the error like any other finish and succeeds.
TEST(NumericGuard, RunToCompletionReportsTheErrorAndGoesOn) {
  Fault f;
  f.firstToken = kBad.promptTokenIds[0];
  f.promptLen = kBad.promptTokenIds.size();
  f.outputToken = 4;
  f.value = -INFINITY;
  auto engine = makeEngine({f});
  std::vector<NewRequest> requests = others();
  requests.push_back(kBad);
  for (const NewRequest &r : requests)
    ASSERT_TRUE(engine->addRequest(r));
  std::map<std::string, RequestOutput> finished;
  Status s = engine->runToCompletion([&](const RequestOutput &o) {
    if (o.finished)
      finished[o.requestId] = o;
  });
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(finished.size(), 4u);
  EXPECT_EQ(finished["bad"].finishReason, FinishReason::Error);
  EXPECT_EQ(finished["bad"].error,
            "logits of request 'bad' hold only -inf at step 4, output token 4");
  EXPECT_EQ(finished["a"].finishReason, FinishReason::Length);
}

// core::Engine (folio-run) applies the same guard per row; it returns one
// result for the batch, so a faulty row fails the call naming the prompt,
// while -inf entries alone are masked tokens.
TEST(NumericGuard, EngineGenerateNamesThePrompt) {
  std::vector<std::vector<TokenId>> prompts = {{11, 12, 13}, {21, 22}};
  auto run = [&](Fault f) {
    f.firstToken = 21;
    f.promptLen = 2;
    f.outputToken = 1;
    auto engine = core::Engine::create(
        std::make_shared<plan::Plan>(),
        std::make_unique<FakeExecutor>(std::vector<Fault>{f}), 32);
    EXPECT_TRUE(engine) << engine.status().message();
    core::GenerateOptions o;
    o.maxNewTokens = 3;
    return (*engine)->generateGreedy(prompts, o);
  };
  Fault allMasked;
  allMasked.value = -INFINITY;
  auto r = run(allMasked);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "prompt 2: every logit the model produced "
                                  "is -inf at new token 1");
  Fault inf;
  inf.entries = {9};
  inf.value = INFINITY;
  r = run(inf);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "prompt 2: the model produced a +inf logit "
                                  "(token 9) at new token 1");
  Fault someMasked;
  someMasked.entries = {0, 1, 2};
  someMasked.value = -INFINITY;
  r = run(someMasked);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->tokens[1].size(), 3u);
}
