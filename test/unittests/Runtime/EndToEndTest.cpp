//===- EndToEndTest.cpp - Same outputs under any batching -----------------===//
//
// Runs one workload through the scheduler, KV cache manager, fake model and
// sampler under many configurations — ample and scarce memory (so requests
// are preempted and recomputed), whole and chunked prefill, prefix caching
// on and off, speculative drafts, other policies — and checks every
// request's output against a direct, batch-free computation of what the
// model and sampler produce for that request alone.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/Runtime/EngineHarness.h"
#include "test/unittests/Runtime/FakeModel.h"

#include "runtime/Sampler/Sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

using namespace folio;
using namespace folio::test;

namespace {

constexpr size_t kVocab = 48;
constexpr TokenId kEos = 47;
constexpr size_t kMaxModelLen = 96;
constexpr size_t kBlockSize = 4;

std::vector<TimedRequest> makeWorkload(uint32_t seed, size_t numRequests) {
  std::mt19937 rng(seed);
  auto randomTokens = [&](size_t n) {
    std::vector<TokenId> tokens(n);
    for (TokenId &t : tokens)
      t = static_cast<TokenId>(rng() % 40);
    return tokens;
  };
  std::vector<std::vector<TokenId>> prefixes = {
      randomTokens(9), randomTokens(17), randomTokens(30)};
  std::vector<TimedRequest> workload;
  for (size_t i = 0; i < numRequests; ++i) {
    TimedRequest timed;
    NewRequest &r = timed.request;
    r.requestId = "r" + std::to_string(i);
    if (rng() % 3 != 0)
      r.promptTokenIds = prefixes[rng() % prefixes.size()];
    std::vector<TokenId> suffix = randomTokens(1 + rng() % 20);
    r.promptTokenIds.insert(r.promptTokenIds.end(), suffix.begin(),
                            suffix.end());
    r.priority = static_cast<int32_t>(rng() % 3);
    SamplingParams &p = r.samplingParams;
    p.maxTokens = 4 + rng() % 27;
    if (rng() % 2) {
      p.temperature = 0;
    } else {
      p.temperature = 0.8f;
      p.topP = 0.95f;
      p.topK = 30;
      p.repetitionPenalty = 1.1f;
      p.presencePenalty = 0.2f;
      p.seed = 1000 + i;
    }
    if (rng() % 4 == 0)
      p.stopTokenIds = {3};
    if (rng() % 5 == 0)
      p.ignoreEos = true;
    timed.arrivalStep = rng() % 12;
    workload.push_back(timed);
  }
  return workload;
}

/// What the request generates when it runs alone, token by token, with no
/// scheduler, KV cache or batching involved.
std::vector<TokenId> directOutput(const FakeModel &model, const NewRequest &r,
                                  uint64_t seed) {
  const SamplingParams &p = r.samplingParams;
  std::vector<TokenId> all = r.promptTokenIds, output;
  while (true) {
    std::vector<float> logits = model.logitsFor(all);
    SampleRow row{&p, &r.promptTokenIds, &output, seed, all.size()};
    TokenId token = sampleRow(logits.data(), kVocab, row)->token;
    output.push_back(token);
    all.push_back(token);
    if (output.size() >= *p.maxTokens || all.size() >= kMaxModelLen)
      break;
    if (!p.ignoreEos && token == kEos)
      break;
    if (std::count(p.stopTokenIds.begin(), p.stopTokenIds.end(), token))
      break;
  }
  return output;
}

std::map<RequestId, std::vector<TokenId>>
expectedOutputs(const std::vector<TimedRequest> &workload) {
  FakeModel model(1, 1, kVocab);
  std::map<RequestId, std::vector<TokenId>> expected;
  for (const TimedRequest &timed : workload) {
    const NewRequest &r = timed.request;
    expected[r.requestId] =
        directOutput(model, r, r.samplingParams.seed.value_or(0));
  }
  return expected;
}

SchedulerConfig baseConfig() {
  SchedulerConfig config;
  config.maxNumBatchedTokens = 4096;
  config.maxNumSeqs = 256;
  config.maxModelLen = kMaxModelLen;
  config.enableChunkedPrefill = false;
  config.eosTokenId = kEos;
  config.vocabSize = kVocab;
  return config;
}

KVCacheConfig kvConfig(size_t numBlocks, bool caching) {
  KVCacheConfig config;
  config.numBlocks = numBlocks;
  config.blockSize = kBlockSize;
  config.enablePrefixCaching = caching;
  return config;
}

void expectSameOutputs(const RunResult &result,
                       const std::map<RequestId, std::vector<TokenId>> &want) {
  for (const std::string &error : result.errors)
    ADD_FAILURE() << error;
  ASSERT_EQ(result.outputs.size(), want.size());
  for (const auto &[id, tokens] : want)
    EXPECT_EQ(result.outputs.at(id), tokens) << "request " << id;
}

class RuntimeEndToEnd : public ::testing::TestWithParam<uint32_t> {
protected:
  void SetUp() override {
    workload = makeWorkload(GetParam(), 40);
    expected = expectedOutputs(workload);
  }
  std::vector<TimedRequest> workload;
  std::map<RequestId, std::vector<TokenId>> expected;
};

TEST_P(RuntimeEndToEnd, AmpleMemoryWholePrefill) {
  RunResult result =
      runEngine(baseConfig(), kvConfig(2000, false), workload, kVocab);
  expectSameOutputs(result, expected);
  EXPECT_EQ(result.numPreemptions, 0u);
}

TEST_P(RuntimeEndToEnd, MemoryPressureAndChunkedPrefill) {
  SchedulerConfig config = baseConfig();
  config.enableChunkedPrefill = true;
  config.maxNumBatchedTokens = 16;
  RunResult result = runEngine(config, kvConfig(26, false), workload, kVocab);
  expectSameOutputs(result, expected);
  EXPECT_GT(result.numPreemptions, 0u);
  EXPECT_LE(result.maxTokensInStep, 16u);
}

TEST_P(RuntimeEndToEnd, MemoryPressureWholePrefill) {
  RunResult result =
      runEngine(baseConfig(), kvConfig(30, false), workload, kVocab);
  expectSameOutputs(result, expected);
  EXPECT_GT(result.numPreemptions, 0u);
}

TEST_P(RuntimeEndToEnd, PrefixCacheHitsMatchMisses) {
  RunResult result =
      runEngine(baseConfig(), kvConfig(2000, true), workload, kVocab);
  expectSameOutputs(result, expected);
  EXPECT_GT(result.numPrefixHitTokens, 0u);
}

TEST_P(RuntimeEndToEnd, PrefixCacheUnderPressureWithTinyChunks) {
  SchedulerConfig config = baseConfig();
  config.enableChunkedPrefill = true;
  config.maxNumBatchedTokens = 5;
  config.maxNumSeqs = 3;
  RunResult result = runEngine(config, kvConfig(28, true), workload, kVocab);
  expectSameOutputs(result, expected);
  EXPECT_GT(result.numPrefixHitTokens, 0u);
}

TEST_P(RuntimeEndToEnd, PriorityWithGuaranteedNoEvictNeverPreempts) {
  SchedulerConfig config = baseConfig();
  config.ordering = OrderingPolicyKind::Priority;
  config.capacity = CapacityPolicyKind::GuaranteedNoEvict;
  config.enableChunkedPrefill = true;
  config.maxNumBatchedTokens = 32;
  RunResult result = runEngine(config, kvConfig(40, true), workload, kVocab);
  expectSameOutputs(result, expected);
  EXPECT_EQ(result.numPreemptions, 0u);
}

TEST_P(RuntimeEndToEnd, SpeculativeDraftsChangeNothing) {
  // An oracle that knows the answer but is wrong every third step.
  Proposer proposer = [&](const Request &request) {
    const std::vector<TokenId> &want = expected.at(request.requestId);
    std::vector<TokenId> drafts;
    for (size_t k = request.numOutputTokens();
         k < want.size() && drafts.size() < 3; ++k)
      drafts.push_back(want[k]);
    if (request.numOutputTokens() % 3 == 1 && drafts.size() > 1)
      drafts[1] = (drafts[1] + 1) % 40;
    return drafts;
  };
  SchedulerConfig config = baseConfig();
  config.enableChunkedPrefill = true;
  config.maxNumBatchedTokens = 24;
  RunResult result =
      runEngine(config, kvConfig(30, true), workload, kVocab, proposer);
  expectSameOutputs(result, expected);
  EXPECT_GT(result.numAcceptedDrafts, 0u);
  EXPECT_GT(result.numRejectedDrafts, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RuntimeEndToEnd, ::testing::Values(1u, 2u));

TEST(RuntimeEndToEndParallel, SamplesMatchSeparatelySeededRequests) {
  NewRequest r;
  r.requestId = "p";
  for (TokenId t = 0; t < 21; ++t)
    r.promptTokenIds.push_back(t % 40);
  r.samplingParams.temperature = 1.0f;
  r.samplingParams.maxTokens = 12;
  r.samplingParams.seed = 77;
  r.samplingParams.n = 4;
  SchedulerConfig config = baseConfig();
  config.enableChunkedPrefill = true;
  config.maxNumBatchedTokens = 8;
  for (bool caching : {false, true}) {
    RunResult result =
        runEngine(config, kvConfig(40, caching), {{r, 0}}, kVocab);
    for (const std::string &error : result.errors)
      ADD_FAILURE() << error;
    FakeModel model(1, 1, kVocab);
    std::set<std::vector<TokenId>> distinct;
    for (uint64_t i = 0; i < 4; ++i) {
      const std::vector<TokenId> &got =
          result.outputs["p#" + std::to_string(i)];
      EXPECT_EQ(got, directOutput(model, r, 77 + i)) << "sample " << i;
      distinct.insert(got);
    }
    EXPECT_GT(distinct.size(), 1u);
  }
}

} // namespace
