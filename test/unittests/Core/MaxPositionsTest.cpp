//===- MaxPositionsTest.cpp - Contexts beyond a position table ------------===//
//
// The zoo gpt2 has a learned position table of 128 rows (the plan's
// max_positions). Every engine refuses a max-model-len, or a prompt plus
// its new tokens, beyond it before running anything, naming the limit;
// past the engines, the embedding kernel names the table's rows, not the
// vocabulary.
//
//===----------------------------------------------------------------------===//

#include "runtime/Core/ServingEngine.h"
#include "test/unittests/Core/ZooRun.h"

using namespace folio;
using folio::testing::compile;

namespace {

const char *const kTooLong = "max-model-len 200 exceeds the model's 128 "
                             "positions (its position table's rows, the "
                             "plan's max_positions)";

TEST(MaxPositions, EngineRefusesAMaxModelLenBeyondThePositionTable) {
  auto p = compile("gpt2", "cached");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->configValue("max_positions", 0), 128);
  auto engine = core::Engine::create(p, exec::createCPUExecutor(), 64);
  ASSERT_TRUE(engine) << engine.status().message();
  core::GenerateOptions o;
  o.maxNewTokens = 10;
  o.maxModelLen = 200;
  // Short or long, the prompt is not what is wrong.
  for (size_t len : {size_t(1), size_t(120)}) {
    auto r = (*engine)->generateGreedy({std::vector<TokenId>(len, 1)}, o);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().message(), kTooLong);
  }
  // The same check, before an engine exists (folio-run sizes its KV cache
  // after it).
  Status s = core::Engine::checkGenerate(*p, 256, {{1}}, o);
  EXPECT_EQ(s.message(), kTooLong);
  // Up to the table is served: 120 + 9 new tokens reaches position 127.
  o.maxModelLen = 128;
  o.maxNewTokens = 9;
  auto r = (*engine)->generateGreedy({std::vector<TokenId>(120, 1)}, o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->tokens[0].size(), 9u);
  o.maxNewTokens = 10;
  r = (*engine)->generateGreedy({std::vector<TokenId>(120, 1)}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "prompt 1 (120 tokens) plus 10 new tokens "
                                  "exceeds the model's 128 positions");
}

TEST(MaxPositions, ServingEngineRefusesAMaxModelLenBeyondThePositionTable) {
  auto p = compile("gpt2", "cached");
  ASSERT_TRUE(p);
  SchedulerConfig config;
  config.vocabSize = 256;
  KVCacheConfig kv;
  kv.numBlocks = 64;
  kv.blockSize = 16;
  config.maxModelLen = 200;
  auto engine =
      core::ServingEngine::create(p, exec::createCPUExecutor(), config, kv);
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.status().message(), kTooLong);
  // The scheduler's default (2048) is refused the same way.
  config.maxModelLen = SchedulerConfig().maxModelLen;
  engine =
      core::ServingEngine::create(p, exec::createCPUExecutor(), config, kv);
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.status().message().find("exceeds the model's 128 positions"),
            std::string::npos);
  // At the table's size, a request past it is refused when added.
  config.maxModelLen = 128;
  engine =
      core::ServingEngine::create(p, exec::createCPUExecutor(), config, kv);
  ASSERT_TRUE(engine) << engine.status().message();
  NewRequest r;
  r.requestId = "long";
  r.promptTokenIds.assign(120, 1);
  r.samplingParams.temperature = 0;
  r.samplingParams.maxTokens = 10;
  Status s = (*engine)->addRequest(r);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("maximum context length is 128"),
            std::string::npos)
      << s.message();
  r.samplingParams.maxTokens = 8;
  ASSERT_TRUE((*engine)->addRequest(r));
  size_t produced = 0;
  ASSERT_TRUE((*engine)->runToCompletion(
      [&](const RequestOutput &out) { produced += out.newTokenIds.size(); }));
  EXPECT_EQ(produced, 8u);
}

// A plan that does not declare its position table (max_positions removed)
// gets past the engines' checks; the embedding step then fails naming the
// step and the table's rows, not the vocabulary.
TEST(MaxPositions, EmbeddingNamesTheTableRowsNotTheVocabulary) {
  auto compiled = compile("gpt2", "cached");
  ASSERT_TRUE(compiled);
  plan::Plan stripped = *compiled;
  auto &cfg = stripped.config;
  cfg.erase(std::remove_if(
                cfg.begin(), cfg.end(),
                [](const auto &kv) { return kv.first == "max_positions"; }),
            cfg.end());
  auto p = std::make_shared<const plan::Plan>(std::move(stripped));
  auto engine = core::Engine::create(p, exec::createCPUExecutor(), 64);
  ASSERT_TRUE(engine) << engine.status().message();
  core::GenerateOptions o;
  o.maxNewTokens = 1;
  auto r = (*engine)->generateGreedy({std::vector<TokenId>(129, 1)}, o);
  ASSERT_FALSE(r);
  std::string m = r.status().message();
  EXPECT_EQ(m.rfind("embedding '", 0), 0u) << m;
  EXPECT_NE(m.find("index 128 (element 128 of the indices) is outside the "
                   "table's 128 rows [0, 128)"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("vocabulary"), std::string::npos) << m;
}

} // namespace
