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

#include "runtime/Executor/FusedKernels.h"
#include "runtime/Plan/PlanIO.h"
#include "test/unittests/Core/ZooRun.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace folio;
using folio::testing::compile;
using folio::testing::generate;
using folio::testing::loadFixture;
using folio::testing::ModelForm;
using folio::testing::RefFixture;
using folio::testing::relDiff;

namespace {

class ZooParity : public ::testing::TestWithParam<ModelForm> {};

TEST_P(ZooParity, BatchMatchesOnnxRuntimeAndSinglePrompts) {
  ModelForm mf = GetParam();
  RefFixture ref = folio::testing::loadFixtureFor(mf);
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

INSTANTIATE_TEST_SUITE_P(Zoo, ZooParity,
                         ::testing::ValuesIn(folio::testing::zooModels()),
                         [](const ::testing::TestParamInfo<ModelForm> &info) {
                           return std::string(info.param.arch) + "_" +
                                  info.param.form;
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

TEST(Engine, RefusesSequencesBeyondProvenContext) {
  // Without a KV cache the mask is evaluated up to 2048 tokens, with one
  // over one query of 2^20 keys: the plans carry these as max_context.
  auto nocache = compile("llama", "nocache");
  auto cached = compile("llama", "cached");
  ASSERT_TRUE(nocache && cached);
  EXPECT_EQ(nocache->configValue("max_context", 0), 2048);
  EXPECT_EQ(cached->configValue("max_context", 0), int64_t(1) << 20);

  // The same plan as if its masks were proven only up to 8 tokens.
  plan::Plan shortPlan = *nocache;
  for (auto &[key, value] : shortPlan.config)
    if (key == "max_context")
      value = 8;
  auto p = std::make_shared<const plan::Plan>(std::move(shortPlan));
  auto engine = core::Engine::create(p, exec::createCPUExecutor(), 16);
  ASSERT_TRUE(engine);
  core::GenerateOptions o;
  o.maxNewTokens = 4;
  auto r = (*engine)->generateGreedy({std::vector<TokenId>(9, 1)}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "prompt 1 has 9 tokens, more than the 8 tokens the model's "
            "attention masks were proven causal up to");
  r = (*engine)->generateGreedy({std::vector<TokenId>(6, 1)}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "prompt 1 (6 tokens) plus 4 new tokens exceeds the 8 tokens the "
            "model's attention masks were proven causal up to");
  o.maxModelLen = 16;
  r = (*engine)->generateGreedy({std::vector<TokenId>(2, 1)}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "max-model-len 16 exceeds the 8 tokens the model's attention "
            "masks were proven causal up to");
  // Up to the proven length it runs: 5 prompt tokens and 3 fed back.
  o.maxModelLen = 0;
  r = (*engine)->generateGreedy({std::vector<TokenId>(5, 1)}, o);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->tokens[0].size(), 4u);
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

namespace {

// Tests that a forward failing halfway through the plan (kv_write refuses a
// slot beyond the cache, after the embedding and the first projections ran)
// leaves nothing behind: the executor keeps one value table across
// forwards, and the next good batch gives bit-identical logits to a fresh
// executor's.
TEST(Executor, FailedForwardLeavesNoState) {
  auto p = compile("llama", "cached");
  ASSERT_TRUE(p);
  auto run = [&](exec::Executor &ex, const exec::ForwardBatch &b,
                 std::vector<float> &logits) {
    int64_t vocab = 0;
    return ex.forward(b, logits, vocab);
  };
  exec::ForwardBatch good;
  good.tokens = {5, 17, 3};
  good.positions = {0, 1, 2};
  good.slotMapping = {16, 17, 18}; // block 1
  good.queryStartLoc = {0, 3};
  good.seqLens = {3};
  good.blockTables = {1};
  good.maxBlocks = 1;
  good.logitsIndices = {2};
  exec::ForwardBatch bad = good;
  bad.slotMapping = {16, 17, 4 * 16 + 1}; // beyond 4 blocks

  auto fresh = exec::createCPUExecutor();
  ASSERT_TRUE(fresh->load(p));
  ASSERT_TRUE(fresh->allocateKVCache(4));
  std::vector<float> want;
  ASSERT_TRUE(run(*fresh, good, want));

  auto ex = exec::createCPUExecutor();
  ASSERT_TRUE(ex->load(p));
  ASSERT_TRUE(ex->allocateKVCache(4));
  std::vector<float> got;
  Status s = run(*ex, bad, got);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("slot"), std::string::npos) << s.message();
  ASSERT_TRUE(run(*ex, good, got));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4));
  // And again, so the cleared table is reused.
  ASSERT_TRUE(run(*ex, good, got));
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4));
}

} // namespace

namespace {

// Tests that the q, k and v projections of each layer (one input, no bias)
// run as one stacked linear: the 2-layer llama makes 2 x (qkv, o) + lm_head
// = 5 linear calls per forward instead of 9, for a prefill (results copied
// out of the stacked rows) and a one-token decode (results are views).
// The zoo parity tests check the values.
// folio-stack-sibling-linears stacks each layer's q/k/v: 2 layers x (qkv,
// o) + the lm_head, for prefill and decode alike.
TEST(Executor, SiblingLinearsRunAsOne) {
  auto p = compile("llama", "cached");
  ASSERT_TRUE(p);
  exec::ExecutorOptions o;
  o.profile = true;
  auto ex = exec::createCPUExecutor(o);
  ASSERT_TRUE(ex->load(p));
  ASSERT_TRUE(ex->allocateKVCache(4));
  exec::ForwardBatch b;
  b.tokens = {5, 17, 3};
  b.positions = {0, 1, 2};
  b.slotMapping = {16, 17, 18};
  b.queryStartLoc = {0, 3};
  b.seqLens = {3};
  b.blockTables = {1};
  b.maxBlocks = 1;
  b.logitsIndices = {2};
  std::vector<float> logits;
  int64_t vocab = 0;
  auto linearCalls = [&] {
    for (const exec::KindProfile &k : ex->profile())
      if (k.kind == "linear")
        return k.calls;
    return int64_t(-1);
  };
  ASSERT_TRUE(ex->forward(b, logits, vocab));
  EXPECT_EQ(linearCalls(), 5);
  ex->resetProfile();
  exec::ForwardBatch d;
  d.tokens = {9};
  d.positions = {3};
  d.slotMapping = {19};
  d.queryStartLoc = {0, 1};
  d.seqLens = {4};
  d.blockTables = {1};
  d.maxBlocks = 1;
  d.logitsIndices = {0};
  ASSERT_TRUE(ex->forward(d, logits, vocab));
  EXPECT_EQ(linearCalls(), 5);
}

} // namespace

namespace {
/// Logits of a 5-token prefill, then one decode step, through `o`.
std::vector<float> prefillThenDecode(std::shared_ptr<const plan::Plan> p,
                                     exec::ExecutorOptions o) {
  auto ex = exec::createCPUExecutor(o);
  EXPECT_TRUE(ex->load(p));
  EXPECT_TRUE(ex->allocateKVCache(4));
  exec::ForwardBatch b;
  b.tokens = {5, 17, 3, 90, 41};
  b.positions = {0, 1, 2, 3, 4};
  b.slotMapping = {16, 17, 18, 19, 20};
  b.queryStartLoc = {0, 5};
  b.seqLens = {5};
  b.blockTables = {1};
  b.maxBlocks = 1;
  b.logitsIndices = {2, 4};
  std::vector<float> all, logits;
  int64_t vocab = 0;
  EXPECT_TRUE(ex->forward(b, logits, vocab));
  all = logits;
  exec::ForwardBatch d;
  d.tokens = {9};
  d.positions = {5};
  d.slotMapping = {21};
  d.queryStartLoc = {0, 1};
  d.seqLens = {6};
  d.blockTables = {1};
  d.maxBlocks = 1;
  d.logitsIndices = {0};
  EXPECT_TRUE(ex->forward(d, logits, vocab));
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}
} // namespace

// Tests that the CPU's fused kernels (residual add + norm, pointwise
// epilogues of linears and of the lm_head) give bitwise what running the
// same kernels step by step gives, on models that use each of them.
TEST(Executor, FusedKernelsMatchStepByStepBitwise) {
  for (const char *model : {"llama", "gpt2", "gemma", "phi2", "gpt_neox"}) {
    auto p = compile(model, "cached");
    ASSERT_TRUE(p) << model;
    int fusedKinds = 0;
    for (const plan::Kernel &k : p->kernels)
      fusedKinds += exec::findFusedCPUKernel(*p, k) != nullptr;
    EXPECT_GT(fusedKinds, 0) << model;
    exec::ExecutorOptions fused, stepwise;
    stepwise.fusedKernels = false;
    std::vector<float> a = prefillThenDecode(p, fused);
    std::vector<float> b = prefillThenDecode(p, stepwise);
    ASSERT_EQ(a.size(), b.size()) << model;
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << model;
  }
}

// Tests that greedy decoding refuses NaN logits (here from a NaN in the
// embedding table) instead of returning the argmax's arbitrary token.
TEST(Engine, RefusesNaNLogits) {
  auto p = compile("llama", "cached");
  ASSERT_TRUE(p);
  int32_t table = -1;
  for (const plan::Step &s : p->steps)
    if (s.kind == "embedding")
      table = s.operands[0];
  ASSERT_GE(table, 0);
  // A copy of the blob with the table poisoned, in memory: no file format
  // (or checksum) involved.
  uint64_t size = (p->blob.size() + 63) / 64 * 64;
  std::shared_ptr<void> owner(std::aligned_alloc(64, size), std::free);
  ASSERT_TRUE(owner);
  auto *bytes = static_cast<uint8_t *>(owner.get());
  std::memcpy(bytes, p->blob.data(), p->blob.size());
  for (const plan::Constant &c : p->constants)
    if (c.value == table) {
      float nan = std::nanf("");
      for (uint64_t b = 0; b < c.bytes; b += 4)
        std::memcpy(bytes + c.offset + b, &nan, 4);
    }
  plan::Plan poisoned = *p;
  poisoned.blob.adopt(bytes, p->blob.size(), owner);
  auto engine = core::Engine::create(
      std::make_shared<const plan::Plan>(std::move(poisoned)),
      exec::createCPUExecutor(), 64);
  ASSERT_TRUE(engine);
  core::GenerateOptions o;
  o.maxNewTokens = 2;
  auto r = (*engine)->generateGreedy({{1, 2, 3}}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "prompt 1: the model produced a NaN logit "
                                  "(token 0) at new token 0");
}

// Tests that a step asking for no logits rows (a prefill chunk that does not
// reach the end of its prompt) runs and returns an empty [0, vocab] result.
TEST(Executor, NoLogitsRowsGiveEmptyLogits) {
  auto p = compile("llama", "cached");
  ASSERT_TRUE(p);
  auto ex = exec::createCPUExecutor();
  ASSERT_TRUE(ex->load(p));
  ASSERT_TRUE(ex->allocateKVCache(4));
  exec::ForwardBatch b;
  b.tokens = {5, 17};
  b.positions = {0, 1};
  b.slotMapping = {16, 17};
  b.queryStartLoc = {0, 2};
  b.seqLens = {2};
  b.blockTables = {1};
  b.maxBlocks = 1;
  std::vector<float> logits = {1.0f};
  int64_t vocab = 0;
  Status s = ex->forward(b, logits, vocab);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(logits.empty());
  EXPECT_EQ(vocab, 256);
}

// Tests the compiler's buffer plan: far fewer buffers than planned values
// (values whose lifetimes do not overlap share one), and logits bitwise
// equal to allocating every value on its own, through a prefill and a
// decode step (the buffers are sized per step).
TEST(Executor, PlannedBuffersMatchFreshAllocationsBitwise) {
  for (const char *model : {"llama", "gpt2", "gemma", "phi2", "gpt_neox"}) {
    auto p = compile(model, "cached");
    ASSERT_TRUE(p) << model;
    int64_t planned = 0;
    for (const plan::ValueInfo &v : p->values)
      planned += v.buffer >= 0;
    EXPECT_GT(planned, 0) << model;
    EXPECT_LT(int64_t(p->buffers.size()) * 2, planned) << model;
    exec::ExecutorOptions arena, fresh;
    fresh.plannedBuffers = false;
    std::vector<float> a = prefillThenDecode(p, arena);
    std::vector<float> b = prefillThenDecode(p, fresh);
    ASSERT_EQ(a.size(), b.size()) << model;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << model;
  }
}
