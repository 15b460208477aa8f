//===- VerifyTest.cpp - Executor::verify runs the plan's verify entries ---===//

#include "codegen/CPU/SpecVerify.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Executor/Executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace folio;
using namespace folio::exec;

namespace {

constexpr int64_t kVocab = 256; // the zoo llama's

std::shared_ptr<const plan::Plan> compiledLlama() {
  static std::shared_ptr<const plan::Plan> p = [] {
    auto r = mlir::folio::compileONNXToPlan(
        std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
    if (!r) {
      ADD_FAILURE() << llvm::toString(r.takeError());
      return std::make_shared<const plan::Plan>();
    }
    return std::make_shared<const plan::Plan>(std::move(*r));
  }();
  return p;
}

std::unique_ptr<Executor> loaded(std::shared_ptr<const plan::Plan> p) {
  auto e = createCPUExecutor();
  Status s = e->load(std::move(p));
  EXPECT_TRUE(s) << s.message();
  return e;
}

/// Random inputs of S sequences with up to K drafts: sequence s has
/// K - s % 2 drafts (the rest -1), the first `s % (K + 1)` of them the
/// argmax of their row, so greedy acceptance is known.
struct Inputs {
  int64_t S, K;
  std::vector<float> logits, probs, uniforms;
  std::vector<int32_t> drafts;
  std::vector<int32_t> wantGreedy; ///< accepted counts under greedy

  Inputs(int64_t S, int64_t K, unsigned seed) : S(S), K(K) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.f, 2.f);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    logits.resize(size_t(S * (K + 1) * kVocab));
    for (float &x : logits)
      x = normal(rng);
    probs.resize(size_t(S * K * kVocab));
    for (int64_t r = 0; r < S * K; ++r) {
      float sum = 0;
      for (int64_t v = 0; v < kVocab; ++v)
        sum += probs[size_t(r * kVocab + v)] = unit(rng) + 1e-3f;
      for (int64_t v = 0; v < kVocab; ++v)
        probs[size_t(r * kVocab + v)] /= sum;
    }
    uniforms.resize(size_t(S * (K + 1)));
    for (float &u : uniforms)
      u = std::min(unit(rng), 0.999f);
    drafts.assign(size_t(S * K), -1);
    for (int64_t s = 0; s < S; ++s) {
      int64_t k = K - s % 2, match = std::min<int64_t>(s % (K + 1), k);
      for (int64_t j = 0; j < k; ++j) {
        const float *row = &logits[size_t((s * (K + 1) + j) * kVocab)];
        int32_t argmax = int32_t(std::max_element(row, row + kVocab) - row);
        // A mismatch at `match` ends acceptance; later drafts are random.
        int32_t other = int32_t((argmax + 1 + rng() % (kVocab - 1)) % kVocab);
        drafts[size_t(s * K + j)] = j < match ? argmax : other;
      }
      wantGreedy.push_back(int32_t(match));
    }
  }

  VerifyBatch batch(bool sample, bool withProbs) const {
    VerifyBatch b;
    b.numSeqs = S;
    b.numDraft = K;
    b.vocab = kVocab;
    b.sample = sample;
    b.targetLogits = logits.data();
    b.draftTokens = drafts.data();
    b.draftProbs = sample && withProbs ? probs.data() : nullptr;
    b.uniforms = sample ? uniforms.data() : nullptr;
    return b;
  }

  /// The kernel called directly on the same arrays.
  void direct(const VerifyBatch &b, std::vector<int32_t> &accepted,
              std::vector<int32_t> &tokens) const {
    accepted.assign(size_t(S), 0);
    tokens.assign(size_t(S * (K + 1)), -1);
    cpu::SpecVerifyArgs a;
    a.numSeqs = S;
    a.numDraft = K;
    a.vocab = kVocab;
    a.targetLogits = b.targetLogits;
    a.draftTokens = b.draftTokens;
    a.draftProbs = b.draftProbs;
    a.uniforms = b.uniforms;
    a.accepted = accepted.data();
    a.tokens = tokens.data();
    cpu::Status s =
        b.sample ? cpu::specVerifySample(a) : cpu::specVerifyGreedy(a);
    ASSERT_TRUE(s) << s.message();
  }
};

// Tests that greedy verification through the plan's entry gives what the
// kernel gives, and the acceptance the inputs were built for: the longest
// prefix of argmax drafts, then the argmax of the next row.
TEST(ExecutorVerify, GreedyMatchesTheKernel) {
  auto exec = loaded(compiledLlama());
  for (unsigned seed : {1u, 2u, 3u}) {
    Inputs in(5, 4, seed);
    VerifyBatch b = in.batch(false, false);
    std::vector<int32_t> accepted, tokens, wantAccepted, wantTokens;
    ASSERT_TRUE(exec->verify(b, accepted, tokens));
    in.direct(b, wantAccepted, wantTokens);
    EXPECT_EQ(accepted, wantAccepted);
    EXPECT_EQ(tokens, wantTokens);
    EXPECT_EQ(accepted, in.wantGreedy);
    for (int64_t s = 0; s < in.S; ++s) {
      int64_t a = accepted[size_t(s)];
      const float *row = &in.logits[size_t((s * 5 + a) * kVocab)];
      EXPECT_EQ(tokens[size_t(s * 5 + a)],
                int32_t(std::max_element(row, row + kVocab) - row));
      for (int64_t j = a + 1; j < 5; ++j)
        EXPECT_EQ(tokens[size_t(s * 5 + j)], -1);
    }
  }
}

// Tests rejection sampling with the draft's probabilities and with one-hot
// drafts (no probabilities): the executor's results are the kernel's.
TEST(ExecutorVerify, SampleAndOneHotMatchTheKernel) {
  auto exec = loaded(compiledLlama());
  for (bool withProbs : {true, false})
    for (unsigned seed : {4u, 5u, 6u}) {
      SCOPED_TRACE(withProbs ? "draft probabilities" : "one-hot drafts");
      Inputs in(6, 3, seed);
      VerifyBatch b = in.batch(true, withProbs);
      std::vector<int32_t> accepted, tokens, wantAccepted, wantTokens;
      Status s = exec->verify(b, accepted, tokens);
      ASSERT_TRUE(s) << s.message();
      in.direct(b, wantAccepted, wantTokens);
      EXPECT_EQ(accepted, wantAccepted);
      EXPECT_EQ(tokens, wantTokens);
      for (int64_t q = 0; q < in.S; ++q) {
        int32_t a = accepted[size_t(q)];
        ASSERT_GE(a, 0);
        ASSERT_LE(a, 3);
        int32_t last = tokens[size_t(q * 4 + a)];
        EXPECT_GE(last, 0);
        EXPECT_LT(last, kVocab);
      }
    }
}

// Tests that an empty batch verifies nothing and succeeds.
TEST(ExecutorVerify, EmptyBatch) {
  auto exec = loaded(compiledLlama());
  VerifyBatch b;
  b.vocab = kVocab;
  std::vector<int32_t> accepted = {7}, tokens = {7};
  ASSERT_TRUE(exec->verify(b, accepted, tokens));
  EXPECT_TRUE(accepted.empty());
  EXPECT_TRUE(tokens.empty());
}

// Tests that a plan without the entry a batch needs is refused, naming the
// entry and how to get it; the other entries still run.
TEST(ExecutorVerify, PlanWithoutTheEntry) {
  auto stripped = std::make_shared<plan::Plan>(*compiledLlama());
  stripped->entries.erase(stripped->entries.begin() + 2); // sample_onehot
  auto exec = loaded(stripped);
  Inputs in(2, 2, 7);
  std::vector<int32_t> accepted, tokens;
  Status s = exec->verify(in.batch(true, false), accepted, tokens);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "the plan has no 'verify_sample_onehot' entry, which sampled "
            "verification of one-hot drafts (no draft probabilities) runs; "
            "folioc compiles it into every plan (folio-speculative): "
            "recompile the model with folioc");
  EXPECT_TRUE(exec->verify(in.batch(true, true), accepted, tokens));

  stripped->entries.clear();
  exec = loaded(stripped);
  s = exec->verify(in.batch(false, false), accepted, tokens);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "the plan has no 'verify_greedy' entry, which greedy "
                         "verification runs; folioc compiles it into every "
                         "plan (folio-speculative): recompile the model with "
                         "folioc");
}

// Tests that batches that do not fit the entry are refused before the
// kernel runs: another vocabulary, negative counts, missing arrays, and
// sampling inputs in greedy mode.
TEST(ExecutorVerify, RefusesBatchesThatDoNotFit) {
  auto exec = loaded(compiledLlama());
  Inputs in(2, 2, 8);
  std::vector<int32_t> accepted, tokens;
  VerifyBatch b = in.batch(false, false);
  b.vocab = 128;
  Status s = exec->verify(b, accepted, tokens);
  EXPECT_EQ(s.message(), "verify entry 'verify_greedy': the batch's vocab is "
                         "128 but the plan's target_logits are [S, K+1, 256]");
  b = in.batch(false, false);
  b.numDraft = -1;
  s = exec->verify(b, accepted, tokens);
  EXPECT_EQ(s.message(), "verify entry 'verify_greedy': 2 sequences of -1 "
                         "drafts; both counts must be >= 0");
  b = in.batch(true, true);
  b.uniforms = nullptr;
  s = exec->verify(b, accepted, tokens);
  EXPECT_EQ(s.message(), "verify entry 'verify_sample': VerifyBatch::uniforms "
                         "is null but must hold 6 elements");
  b = in.batch(false, false);
  b.uniforms = in.uniforms.data();
  s = exec->verify(b, accepted, tokens);
  EXPECT_EQ(s.message(),
            "greedy verification takes no draft probabilities or uniforms (it "
            "matches the target's argmax); set VerifyBatch::sample to verify "
            "by rejection sampling");
  // A draft outside the vocabulary: the kernel's message, placed.
  b = in.batch(false, false);
  std::vector<int32_t> bad = in.drafts;
  bad[0] = int32_t(kVocab);
  b.draftTokens = bad.data();
  s = exec->verify(b, accepted, tokens);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message().rfind("verify entry 'verify_greedy' (step "
                              "'verify_greedy'): ",
                              0),
            0u)
      << s.message();
}

// Tests that a plan whose verify entry is corrupt is refused at load, not
// when verifying.
TEST(ExecutorVerify, LoadRefusesACorruptEntry) {
  auto p = std::make_shared<plan::Plan>(*compiledLlama());
  p->entries[0].steps[0].attrs = {{"mode", std::string("sample")}};
  auto exec = createCPUExecutor();
  Status s = exec->load(p);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "plan: entry 'verify_greedy' step 'spec_verify' "
                         "('verify_greedy') has mode 'sample'; this entry "
                         "verifies in 'greedy' mode");
  std::vector<int32_t> accepted, tokens;
  Inputs in(1, 1, 9);
  auto fresh = createCPUExecutor();
  s = fresh->verify(in.batch(false, false), accepted, tokens);
  EXPECT_EQ(s.message(), "verify needs a loaded plan");
}

} // namespace
