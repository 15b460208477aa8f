//===- ParityTest.cpp - Zoo models against ONNX Runtime
//--------------------===//
//
// Every zoo model and form: the four reference prompts (1, 5, 11 and 16
// tokens: a one-token prompt, one longer than Mistral's and Gemma's sliding
// window of 8, one ending exactly on a 16-token block boundary) run together
// as one ragged batch for 16 greedy tokens. Tokens must equal ONNX
// Runtime's and every step's logits must lie within
// 1e-3 * max|reference logit|. Each prompt run alone must give the same
// tokens and logits as in the batch.
//
//===----------------------------------------------------------------------===//

#include "Fixtures.h"

#include "Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace folio;
using folio::testing::loadFixture;
using folio::testing::RefFixture;

namespace {

struct ModelForm {
  const char *arch;
  const char *form;
};

std::ostream &operator<<(std::ostream &os, const ModelForm &m) {
  return os << m.arch << "/" << m.form;
}

std::shared_ptr<const plan::Plan> compile(const std::string &arch,
                                          const std::string &form,
                                          int64_t blockSize = 16) {
  mlir::folio::CompileToPlanOptions options;
  options.blockSize = blockSize;
  auto p = mlir::folio::compileONNXToPlan(
      folio::testing::zooPath(arch + "/" + form + ".onnx"), options);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return nullptr;
  }
  return std::make_shared<const plan::Plan>(std::move(*p));
}

core::GenerateResult generate(std::shared_ptr<const plan::Plan> p,
                              const std::vector<std::vector<TokenId>> &prompts,
                              int64_t steps) {
  int64_t bs = p->configValue("block_size", 16);
  auto engine =
      core::Engine::create(p, exec::createCPUExecutor(),
                           core::Engine::blocksFor(prompts, steps, bs));
  EXPECT_TRUE(engine) << engine.status().message();
  if (!engine)
    return {};
  core::GenerateOptions o;
  o.maxNewTokens = steps;
  o.keepLogits = true;
  auto r = (*engine)->generateGreedy(prompts, o);
  EXPECT_TRUE(r) << r.status().message();
  return r ? *r : core::GenerateResult();
}

/// max |got - ref| / max |ref| over the rows of one prompt.
double relDiff(const float *got, const float *ref, int64_t n) {
  double d = 0, m = 0;
  for (int64_t i = 0; i < n; ++i) {
    d = std::max(d, double(std::fabs(got[i] - ref[i])));
    m = std::max(m, double(std::fabs(ref[i])));
  }
  return d / m;
}

class ZooParity : public ::testing::TestWithParam<ModelForm> {};

TEST_P(ZooParity, BatchMatchesOnnxRuntimeAndSinglePrompts) {
  ModelForm mf = GetParam();
  std::string refForm =
      std::string(mf.form) == "cached_external" ? "cached" : mf.form;
  RefFixture ref = loadFixture(mf.arch, refForm);
  ASSERT_TRUE(ref.ok) << "missing fixture for " << mf;
  auto p = compile(mf.arch, mf.form);
  ASSERT_TRUE(p);
  std::vector<std::vector<TokenId>> prompts;
  for (const auto &c : ref.cases)
    prompts.push_back(c.prompt);
  core::GenerateResult batch = generate(p, prompts, ref.steps);
  ASSERT_EQ(batch.vocab, ref.vocab);
  double worst = 0;
  for (size_t c = 0; c < ref.cases.size(); ++c) {
    EXPECT_EQ(batch.tokens[c], ref.cases[c].tokens)
        << mf << " " << ref.cases[c].name;
    const float *got = batch.logits.data() + c * size_t(ref.steps * ref.vocab);
    double d = relDiff(got, ref.row(c, 0), ref.steps * ref.vocab);
    worst = std::max(worst, d);
    EXPECT_LE(d, 1e-3) << mf << " " << ref.cases[c].name;

    core::GenerateResult alone = generate(p, {prompts[c]}, ref.steps);
    EXPECT_EQ(alone.tokens[0], batch.tokens[c]) << mf << " alone";
    EXPECT_LE(relDiff(alone.logits.data(), got, ref.steps * ref.vocab), 1e-5)
        << mf << " " << ref.cases[c].name << " alone vs batched";
  }
  RecordProperty("max_rel_diff", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, ZooParity,
    ::testing::Values(
        ModelForm{"llama", "cached"}, ModelForm{"llama", "cached_nopos"},
        ModelForm{"llama", "nocache"}, ModelForm{"llama", "cached_external"},
        ModelForm{"llama", "fused_onnx23"}, ModelForm{"llama", "fused_ms"},
        ModelForm{"mistral", "cached"}, ModelForm{"mistral", "cached_nopos"},
        ModelForm{"mistral", "nocache"}, ModelForm{"qwen2", "cached"},
        ModelForm{"qwen2", "cached_nopos"}, ModelForm{"qwen2", "nocache"},
        ModelForm{"gpt2", "cached"}, ModelForm{"gpt2", "cached_nopos"},
        ModelForm{"gpt2", "nocache"}, ModelForm{"phi2", "cached"},
        ModelForm{"phi2", "cached_nopos"}, ModelForm{"phi2", "nocache"},
        ModelForm{"gpt_neox", "cached"}, ModelForm{"gpt_neox", "cached_nopos"},
        ModelForm{"gpt_neox", "nocache"}, ModelForm{"gptj", "cached"},
        ModelForm{"gptj", "cached_nopos"}, ModelForm{"gptj", "nocache"},
        ModelForm{"gemma", "cached"}, ModelForm{"gemma", "cached_nopos"},
        ModelForm{"gemma", "nocache"}),
    [](const ::testing::TestParamInfo<ModelForm> &info) {
      return std::string(info.param.arch) + "_" + info.param.form;
    });

// Small blocks put every prompt across several blocks and p16 on a block
// boundary twice over; the results must not depend on the block size.
TEST(ZooParityBlocks, BlockSize8MatchesReference) {
  RefFixture ref = loadFixture("mistral", "cached");
  ASSERT_TRUE(ref.ok);
  auto p = compile("mistral", "cached", 8);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->configValue("block_size", 0), 8);
  std::vector<std::vector<TokenId>> prompts;
  for (const auto &c : ref.cases)
    prompts.push_back(c.prompt);
  core::GenerateResult r = generate(p, prompts, ref.steps);
  for (size_t c = 0; c < ref.cases.size(); ++c) {
    EXPECT_EQ(r.tokens[c], ref.cases[c].tokens) << ref.cases[c].name;
    EXPECT_LE(relDiff(r.logits.data() + c * size_t(ref.steps * ref.vocab),
                      ref.row(c, 0), ref.steps * ref.vocab),
              1e-3);
  }
}

// A context far beyond Mistral's window of 8 (a 40-token prompt, 60
// positions in all): the windowed cached form and the full-recompute form
// are two different graphs, so they must agree token for token.
TEST(ZooParityWindow, LongContextCachedEqualsNoCache) {
  std::vector<TokenId> prompt;
  for (int i = 0; i < 40; ++i)
    prompt.push_back(TokenId((i * 37 + 11) % 256));
  auto cached = compile("mistral", "cached");
  auto nocache = compile("mistral", "nocache");
  ASSERT_TRUE(cached && nocache);
  core::GenerateResult a = generate(cached, {prompt}, 20);
  core::GenerateResult b = generate(nocache, {prompt}, 20);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_LE(relDiff(a.logits.data(), b.logits.data(), 20 * a.vocab), 1e-5);
}

TEST(Engine, RefusesPromptsBeyondMaxPositions) {
  auto p = compile("gpt2", "cached");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->configValue("max_positions", 0), 128);
  auto engine = core::Engine::create(p, exec::createCPUExecutor(), 64);
  ASSERT_TRUE(engine);
  core::GenerateOptions o;
  o.maxNewTokens = 4;
  std::vector<TokenId> longPrompt(129, 1);
  auto r = (*engine)->generateGreedy({longPrompt}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "prompt 1 has 129 tokens, more than the model's 128 positions");
  std::vector<TokenId> edge(126, 1);
  r = (*engine)->generateGreedy({edge}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "prompt 1 (126 tokens) plus 4 new tokens "
                                  "exceeds the model's 128 positions");
  r = (*engine)->generateGreedy({{1, 300}}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "prompt 1: token id 300 is outside the vocabulary [0, 256)");
}

TEST(Engine, ReportsExhaustedKVCache) {
  auto p = compile("llama", "cached");
  ASSERT_TRUE(p);
  auto engine = core::Engine::create(p, exec::createCPUExecutor(), 2);
  ASSERT_TRUE(engine);
  core::GenerateOptions o;
  o.maxNewTokens = 4;
  auto r = (*engine)->generateGreedy({std::vector<TokenId>(20, 3)}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "out of KV cache blocks for sequence 'seq0'");
}

} // namespace
