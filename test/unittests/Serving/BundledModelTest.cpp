//===- BundledModelTest.cpp - The trained bundled model through Folio -----===//
//
// The bundled target model (models/bundled, trained by models/train) must
// mean through Folio what it meant in training: its held-out perplexity,
// teacher-forced through the compiled plan on the CPU executor, equals the
// training script's figure within 1 %; and text generation from a text
// prompt (tokenizer -> serving engine -> tokenizer) is deterministic for a
// given seed.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionTile.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/BatchBuilder.h"
#include "runtime/Core/ServingEngine.h"
#include "runtime/Tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

using namespace folio;

namespace {

const std::string kBundled = std::string(FOLIO_SOURCE_DIR) + "/models/bundled/";

/// The slice perplexity bundled.json records (models/bundled/README.md).
constexpr double kSlicePerplexity = 55.9061;

std::shared_ptr<const plan::Plan> target() {
  static std::shared_ptr<const plan::Plan> cached = [] {
    // Training's perplexity is an f32 property: an explicit f32 cache.
    mlir::folio::CompileToPlanOptions options;
    options.kvCacheDtype = "f32";
    auto p = mlir::folio::compileONNXToPlan(kBundled + "target.onnx", options);
    if (!p) {
      ADD_FAILURE() << llvm::toString(p.takeError());
      return std::shared_ptr<const plan::Plan>();
    }
    return std::make_shared<const plan::Plan>(std::move(*p));
  }();
  return cached;
}

/// Logits at every position of the first `windows` held-out windows (255
/// tokens each, one batch) with the given weight storage.
std::vector<float> windowLogits(exec::WeightType weights, int windows) {
  std::ifstream in(kBundled + "heldout_slice.i32", std::ios::binary);
  std::vector<int32_t> ids(size_t(windows) * 256);
  in.read(reinterpret_cast<char *>(ids.data()),
          std::streamsize(ids.size() * sizeof(int32_t)));
  EXPECT_EQ(in.gcount(), std::streamsize(ids.size() * sizeof(int32_t)));
  exec::ExecutorOptions o;
  o.weights = weights;
  auto executor = exec::createCPUExecutor(o);
  if (!target() || !executor->load(target())) {
    ADD_FAILURE() << "cannot load the bundled model";
    return {};
  }
  int64_t blockSize = executor->kvCacheLayout().blockSize;
  int64_t perWindow = (255 + blockSize - 1) / blockSize;
  EXPECT_TRUE(executor->allocateKVCache(windows * perWindow + 1));
  std::vector<std::vector<TokenId>> tokens(static_cast<size_t>(windows));
  std::vector<std::vector<BlockId>> tables(static_cast<size_t>(windows));
  std::vector<core::ScheduledSequence> seqs;
  for (int w = 0; w < windows; ++w) {
    tokens[size_t(w)].assign(ids.begin() + w * 256,
                             ids.begin() + w * 256 + 255);
    for (int64_t b = 0; b < perWindow; ++b)
      tables[size_t(w)].push_back(BlockId(1 + w * perWindow + b));
    core::ScheduledSequence s;
    s.tokens = &tokens[size_t(w)];
    s.numScheduled = 255;
    s.blockTable = &tables[size_t(w)];
    seqs.push_back(s);
  }
  auto batch = core::buildForwardBatch(seqs, blockSize);
  if (!batch) {
    ADD_FAILURE() << batch.status().message();
    return {};
  }
  batch->logitsIndices.resize(batch->tokens.size());
  for (size_t i = 0; i < batch->tokens.size(); ++i)
    batch->logitsIndices[i] = int32_t(i);
  std::vector<float> logits;
  int64_t vocab = 0;
  EXPECT_TRUE(executor->forward(*batch, logits, vocab));
  return logits;
}

TEST(BundledModel, HeldOutPerplexityMatchesTraining) {
  auto plan = target();
  ASSERT_TRUE(plan);
  // 16 windows of 256 tokens, int32 little-endian.
  std::ifstream in(kBundled + "heldout_slice.i32", std::ios::binary);
  std::vector<int32_t> ids(16 * 256);
  in.read(reinterpret_cast<char *>(ids.data()),
          std::streamsize(ids.size() * sizeof(int32_t)));
  ASSERT_EQ(in.gcount(), std::streamsize(ids.size() * sizeof(int32_t)));
  std::vector<float> logits = windowLogits(exec::WeightType::F32, 16);
  const int64_t vocab = 4096;
  ASSERT_EQ(logits.size(), size_t(16 * 255 * vocab));

  double nll = 0;
  size_t scored = 0;
  for (int w = 0; w < 16; ++w)
    for (int t = 0; t < 255; ++t) {
      const float *row = &logits[size_t(w * 255 + t) * size_t(vocab)];
      double peak = *std::max_element(row, row + vocab), sum = 0;
      for (int64_t v = 0; v < vocab; ++v)
        sum += std::exp(double(row[v]) - peak);
      nll += peak + std::log(sum) - row[ids[w * 256 + t + 1]];
      ++scored;
    }
  ASSERT_EQ(scored, 4080u);
  double ppl = std::exp(nll / double(scored));
  RecordProperty("perplexity", std::to_string(ppl));
  std::printf("held-out slice perplexity through Folio: %.4f (training: "
              "%.4f)\n",
              ppl, kSlicePerplexity);
  EXPECT_NEAR(ppl, kSlicePerplexity, 0.01 * kSlicePerplexity)
      << "Folio's perplexity " << ppl << " vs training's " << kSlicePerplexity;
}

double maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

// Tests that bf16 weights let prefill attention run its products in bf16
// (the AMX tile, where the host has one) and that the logits stay within
// the bf16 bound of the f32 run: (4L + 1) * 2^-8 * max|logit| for L = 6
// layers (docs/bench-cpu-roofline.md). With the AMX tile switched off the
// bf16 run must differ from the AMX one wherever AMX is usable, so the
// executor's switch is shown to reach the kernel.
TEST(BundledModel, Bf16WeightsAllowBf16AttentionWithinBound) {
  ASSERT_TRUE(target());
  std::vector<float> f32 = windowLogits(exec::WeightType::F32, 2);
  std::vector<float> bf16 = windowLogits(exec::WeightType::BF16, 2);
  cpu::detail::AmxMode before =
      cpu::detail::setAmxAttentionMode(cpu::detail::AmxMode::Off);
  std::vector<float> bf16NoAmx = windowLogits(exec::WeightType::BF16, 2);
  cpu::detail::setAmxAttentionMode(before);
  ASSERT_EQ(f32.size(), size_t(2 * 255 * 4096));
  double peak = 0;
  for (float v : f32)
    peak = std::max(peak, std::fabs(double(v)));
  double bound = (4 * 6 + 1) / 256.0 * peak;
  EXPECT_LE(maxAbsDiff(bf16, f32), bound);
  EXPECT_LE(maxAbsDiff(bf16NoAmx, f32), bound);
  if (before == cpu::detail::AmxMode::Auto &&
      cpu::detail::amxAttentionUsable(32, /*allowBf16=*/true)) {
    EXPECT_GT(maxAbsDiff(bf16, bf16NoAmx), 0.0)
        << "bf16 weights did not reach the AMX attention tile";
  }
}

/// Generates from a text prompt with sampling; returns the text.
std::string generate(const Tokenizer &tok, const std::string &prompt,
                     uint64_t seed) {
  SchedulerConfig config;
  config.maxModelLen = 256;
  config.vocabSize = 4096;
  KVCacheConfig kv;
  kv.numBlocks = 64;
  kv.blockSize = 16;
  auto engine = core::ServingEngine::create(target(), exec::createCPUExecutor(),
                                            config, kv);
  EXPECT_TRUE(engine) << engine.status().message();
  if (!engine)
    return "";
  auto ids = tok.encode(prompt);
  EXPECT_TRUE(ids);
  NewRequest r;
  r.requestId = "text";
  r.promptTokenIds = *ids;
  r.samplingParams.temperature = 0.8f;
  r.samplingParams.topP = 0.95f;
  r.samplingParams.seed = seed;
  r.samplingParams.maxTokens = 24;
  r.samplingParams.ignoreEos = true;
  EXPECT_TRUE((*engine)->addRequest(r));
  std::vector<TokenId> out;
  EXPECT_TRUE((*engine)->runToCompletion([&](const RequestOutput &o) {
    out.insert(out.end(), o.newTokenIds.begin(), o.newTokenIds.end());
  }));
  EXPECT_EQ(out.size(), 24u);
  auto text = tok.decode(out);
  EXPECT_TRUE(text);
  return text ? *text : "";
}

TEST(BundledModel, TextGenerationIsDeterministicForASeed) {
  auto plan = target();
  ASSERT_TRUE(plan);
  auto tok = Tokenizer::fromFile(kBundled + "tokenizer.json");
  ASSERT_TRUE(tok) << tok.status().message();
  std::string prompt = "def read_config(path):\n    \"\"\"";
  std::string a = generate(*tok, prompt, 42);
  std::string b = generate(*tok, prompt, 42);
  std::string c = generate(*tok, prompt, 43);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c) << "another seed should sample another continuation";
}

} // namespace
