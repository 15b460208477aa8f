//===- ServingEngineTest.cpp - The engine loop on a compiled zoo model ----===//
//
// Continuous batching must not change what any request generates: greedy
// outputs through the scheduler equal the plain batched run (which matches
// ONNX Runtime, see CoreParityTests) with and without chunked prefill,
// under memory pressure that forces preemption, and with prefix caching;
// seeded sampling gives the same tokens whatever shares the batch.
//
//===----------------------------------------------------------------------===//

#include "runtime/Core/ServingEngine.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"

#include <gtest/gtest.h>

#include <map>

using namespace folio;

namespace {

/// The zoo llama with the default KV cache (int8 on the CPU), or the given
/// dtype.
std::shared_ptr<const plan::Plan> compileLlama(const std::string &dtype = "") {
  static std::map<std::string, std::shared_ptr<const plan::Plan>> cached;
  auto &slot = cached[dtype];
  if (!slot) {
    mlir::folio::CompileToPlanOptions options;
    options.blockSize = 4; // Small blocks: many block boundaries per prompt.
    if (!dtype.empty())
      options.kvCacheDtype = dtype;
    options.kvCacheResidual = dtype == "int2" ? 8 : 0;
    auto p = mlir::folio::compileONNXToPlan(std::string(FOLIO_SOURCE_DIR) +
                                                "/models/zoo/llama/cached.onnx",
                                            options);
    if (!p) {
      ADD_FAILURE() << llvm::toString(p.takeError());
      return nullptr;
    }
    slot = std::make_shared<const plan::Plan>(std::move(*p));
  }
  return slot;
}

const std::vector<std::vector<TokenId>> kPrompts = {
    {17},
    {3, 141, 59, 26, 5},
    {9, 2, 65, 35, 89, 79, 32, 38, 46, 26, 43},
    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
};
constexpr size_t kNewTokens = 12;

/// The reference: every prompt in one plain batch, greedy.
std::vector<std::vector<TokenId>> reference(const std::string &dtype = "") {
  auto p = compileLlama(dtype);
  auto engine =
      core::Engine::create(p, exec::createCPUExecutor(),
                           core::Engine::blocksFor(kPrompts, kNewTokens, 4));
  EXPECT_TRUE(engine) << engine.status().message();
  core::GenerateOptions options;
  options.maxNewTokens = kNewTokens;
  auto result = (*engine)->generateGreedy(kPrompts, options);
  EXPECT_TRUE(result) << result.status().message();
  return result->tokens;
}

struct EngineSetup {
  size_t numBlocks = 64;
  size_t maxNumBatchedTokens = 2048;
  size_t maxNumSeqs = 256;
  bool prefixCaching = false;
  size_t maxModelLen = 64;
  std::string dtype; ///< KV cache; empty: the default
};

std::unique_ptr<core::ServingEngine> makeEngine(const EngineSetup &setup) {
  SchedulerConfig config;
  config.maxNumBatchedTokens = setup.maxNumBatchedTokens;
  config.maxNumSeqs = setup.maxNumSeqs;
  config.maxModelLen = setup.maxModelLen;
  config.vocabSize = 256;
  KVCacheConfig kv;
  kv.numBlocks = setup.numBlocks;
  kv.blockSize = 4;
  kv.enablePrefixCaching = setup.prefixCaching;
  auto engine = core::ServingEngine::create(
      compileLlama(setup.dtype), exec::createCPUExecutor(), config, kv);
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(*engine) : nullptr;
}

NewRequest greedyRequest(const std::string &id,
                         const std::vector<TokenId> &prompt) {
  NewRequest r;
  r.requestId = id;
  r.promptTokenIds = prompt;
  r.samplingParams.temperature = 0.0f;
  r.samplingParams.maxTokens = kNewTokens;
  r.samplingParams.ignoreEos = true;
  return r;
}

/// Runs the prompts through the engine; tokens per request id, streamed.
std::map<std::string, std::vector<TokenId>>
serve(core::ServingEngine &engine, const std::vector<NewRequest> &requests) {
  for (const NewRequest &r : requests)
    EXPECT_TRUE(engine.addRequest(r)) << r.requestId;
  std::map<std::string, std::vector<TokenId>> out;
  Status s = engine.runToCompletion([&](const RequestOutput &o) {
    auto &tokens = out[o.requestId];
    tokens.insert(tokens.end(), o.newTokenIds.begin(), o.newTokenIds.end());
  });
  EXPECT_TRUE(s) << s.message();
  return out;
}

std::vector<NewRequest> greedyRequests() {
  std::vector<NewRequest> requests;
  for (size_t i = 0; i < kPrompts.size(); ++i)
    requests.push_back(greedyRequest("r" + std::to_string(i), kPrompts[i]));
  return requests;
}

void expectMatchesReference(
    const std::map<std::string, std::vector<TokenId>> &served) {
  static const std::vector<std::vector<TokenId>> ref = reference();
  ASSERT_EQ(ref.size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto it = served.find("r" + std::to_string(i));
    ASSERT_NE(it, served.end()) << "request r" << i << " produced nothing";
    EXPECT_EQ(it->second, ref[i]) << "request r" << i;
  }
}

TEST(ServingEngine, GreedyMatchesThePlainBatch) {
  auto engine = makeEngine({});
  ASSERT_TRUE(engine);
  expectMatchesReference(serve(*engine, greedyRequests()));
  EXPECT_EQ(engine->getScheduler().numPreemptions(), 0u);
}

TEST(ServingEngine, ChunkedPrefillGivesTheSameTokens) {
  EngineSetup setup;
  setup.maxNumBatchedTokens = 5; // Prompts of 11 and 16 take several steps.
  auto engine = makeEngine(setup);
  ASSERT_TRUE(engine);
  expectMatchesReference(serve(*engine, greedyRequests()));
}

TEST(ServingEngine, PreemptionUnderMemoryPressureGivesTheSameTokens) {
  EngineSetup setup;
  // 28 tokens (16 + 12) need 7 blocks of 4: room for the longest request
  // alone, not for all four at once.
  setup.numBlocks = 12;
  setup.maxModelLen = 28;
  auto engine = makeEngine(setup);
  ASSERT_TRUE(engine);
  expectMatchesReference(serve(*engine, greedyRequests()));
  EXPECT_GT(engine->getScheduler().numPreemptions(), 0u)
      << "the setup was meant to force preemption";
}

TEST(ServingEngine, PrefixCacheHitsGiveTheSameTokens) {
  EngineSetup setup;
  setup.prefixCaching = true;
  auto engine = makeEngine(setup);
  ASSERT_TRUE(engine);
  // The first round fills the cache; the second reuses its full blocks.
  expectMatchesReference(serve(*engine, greedyRequests()));
  uint64_t hitsBefore = engine->getScheduler().kvCache().numPrefixHitTokens();
  std::vector<NewRequest> again;
  for (size_t i = 0; i < kPrompts.size(); ++i)
    again.push_back(greedyRequest("r" + std::to_string(i), kPrompts[i]));
  expectMatchesReference(serve(*engine, again));
  EXPECT_GT(engine->getScheduler().kvCache().numPrefixHitTokens(), hitsBefore)
      << "the second round was meant to hit the prefix cache";
}

// int2 (KIVI) keeps each sequence's newest tokens in full precision and
// quantizes blocks as they age, from the executor's view of each step.
// Served with every sequence in every step, that is the plain batch's
// schedule, so the tokens are the same.
TEST(ServingEngine, Int2GreedyMatchesThePlainBatch) {
  EngineSetup setup;
  setup.dtype = "int2";
  auto engine = makeEngine(setup);
  ASSERT_TRUE(engine);
  auto served = serve(*engine, greedyRequests());
  std::vector<std::vector<TokenId>> ref = reference("int2");
  for (size_t i = 0; i < kPrompts.size(); ++i)
    EXPECT_EQ(served["r" + std::to_string(i)], ref[i]) << "request r" << i;
}

// Under preemption (recomputed prefixes are written afresh) and prefix
// hits (blocks read quantized by another sequence), every request still
// completes.
TEST(ServingEngine, Int2ServesUnderPreemptionAndPrefixHits) {
  EngineSetup setup;
  setup.dtype = "int2";
  setup.numBlocks = 12;
  setup.maxModelLen = 28;
  setup.prefixCaching = true;
  auto engine = makeEngine(setup);
  ASSERT_TRUE(engine);
  for (int round = 0; round < 2; ++round) {
    auto served = serve(*engine, greedyRequests());
    for (size_t i = 0; i < kPrompts.size(); ++i)
      EXPECT_EQ(served["r" + std::to_string(i)].size(), kNewTokens);
  }
  EXPECT_GT(engine->getScheduler().numPreemptions(), 0u);
}

TEST(ServingEngine, SeededSamplingIgnoresTheBatchMix) {
  auto sampled = [](const std::string &id, const std::vector<TokenId> &p) {
    NewRequest r = greedyRequest(id, p);
    r.samplingParams.temperature = 0.9f;
    r.samplingParams.topK = 50;
    r.samplingParams.seed = 1234;
    return r;
  };
  auto alone = makeEngine({});
  ASSERT_TRUE(alone);
  auto a = serve(*alone, {sampled("a", kPrompts[2])});

  auto mixed = makeEngine({});
  ASSERT_TRUE(mixed);
  auto b = serve(*mixed, {sampled("x", kPrompts[0]), sampled("a", kPrompts[2]),
                          greedyRequest("y", kPrompts[3])});
  ASSERT_EQ(a["a"].size(), kNewTokens);
  EXPECT_EQ(a["a"], b["a"]);
}

TEST(ServingEngine, OverlongRequestIsRefusedAlone) {
  auto engine = makeEngine({});
  ASSERT_TRUE(engine);
  NewRequest tooLong = greedyRequest("long", std::vector<TokenId>(60, 7));
  Status s = engine->addRequest(tooLong);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("max"), std::string::npos) << s.message();
  expectMatchesReference(serve(*engine, greedyRequests()));
}

TEST(ServingEngine, BlockSizeMustMatchThePlan) {
  SchedulerConfig config;
  config.vocabSize = 256;
  KVCacheConfig kv;
  kv.numBlocks = 16;
  kv.blockSize = 16;
  auto engine = core::ServingEngine::create(
      compileLlama(), exec::createCPUExecutor(), config, kv);
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.status().message().find("differs from the plan's (4)"),
            std::string::npos)
      << engine.status().message();
}

TEST(ServingEngine, MaxModelLenBeyondProvenContextIsRefused) {
  // The plan as if its masks were proven causal only up to 32 tokens.
  plan::Plan shortPlan = *compileLlama();
  ASSERT_EQ(shortPlan.configValue("max_context", 0), int64_t(1) << 20);
  for (auto &[key, value] : shortPlan.config)
    if (key == "max_context")
      value = 32;
  SchedulerConfig config;
  config.vocabSize = 256;
  config.maxModelLen = 64;
  KVCacheConfig kv;
  kv.numBlocks = 64;
  kv.blockSize = 4;
  auto engine = core::ServingEngine::create(
      std::make_shared<const plan::Plan>(std::move(shortPlan)),
      exec::createCPUExecutor(), config, kv);
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.status().message(),
            "max-model-len 64 exceeds the 32 tokens the model's attention "
            "masks were proven causal up to");
}

} // namespace

namespace {

TEST(ServingEngine, KVUtilizationIsLiveOverHeldSlots) {
  auto engine = makeEngine({});
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kvUtilization(), 0.0) << "no block held yet";
  // 5 prompt tokens in 4-token blocks: after the prefill 5 of 8 held slots
  // are live.
  ASSERT_TRUE(engine->addRequest(greedyRequest("u", kPrompts[1])));
  auto out = engine->step();
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_DOUBLE_EQ(engine->kvUtilization(), 5.0 / 8.0);
  ASSERT_TRUE(engine->runToCompletion([](const RequestOutput &) {}));
  EXPECT_EQ(engine->kvUtilization(), 0.0) << "finished requests hold none";
}

TEST(ServingEngine, KVUtilizationCountsSharedBlocksOnce) {
  // Two samples of one 16-token prompt share its 4 full blocks: 16 live
  // slots, not 32, whatever each request holds.
  EngineSetup setup;
  setup.prefixCaching = true;
  auto engine = makeEngine(setup);
  ASSERT_TRUE(engine);
  NewRequest r = greedyRequest("p", kPrompts[3]);
  r.samplingParams.n = 2;
  r.samplingParams.temperature = 1.0f;
  r.samplingParams.seed = 1;
  ASSERT_TRUE(engine->addRequest(r));
  double peak = 0;
  while (engine->hasUnfinishedRequests()) {
    auto out = engine->step();
    ASSERT_TRUE(out) << out.status().message();
    peak = std::max(peak, engine->kvUtilization());
  }
  EXPECT_GT(peak, 0.5);
  EXPECT_LE(peak, 1.0) << "a shared block counted twice";
}

} // namespace
