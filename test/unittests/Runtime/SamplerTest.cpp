//===- SamplerTest.cpp - Sampler against a reference ----------------------===//

#include "runtime/Sampler/Sampler.h"
#include "runtime/Sampler/LogitsProcessors.h"
#include "runtime/Sampler/Philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

using namespace folio;

namespace {

constexpr float kNegInf = -INFINITY;

/// A deliberately naive reference in probability space: the distribution
/// a row's token is drawn from, following the OpenAI/vLLM definitions.
std::vector<double> referenceProbs(const std::vector<float> &logits,
                                   const SamplingParams &params,
                                   const std::vector<TokenId> &prompt,
                                   const std::vector<TokenId> &output) {
  size_t vocab = logits.size();
  std::vector<double> l(logits.begin(), logits.end());
  std::set<TokenId> seen(prompt.begin(), prompt.end());
  seen.insert(output.begin(), output.end());
  for (TokenId t : seen)
    l[t] = l[t] > 0 ? l[t] / params.repetitionPenalty
                    : l[t] * params.repetitionPenalty;
  std::map<TokenId, int> counts;
  for (TokenId t : output)
    ++counts[t];
  for (auto [t, c] : counts)
    l[t] -=
        double(params.frequencyPenalty) * c + double(params.presencePenalty);
  std::vector<double> p(vocab, 0.0);
  if (params.temperature == 0) {
    p[std::max_element(l.begin(), l.end()) - l.begin()] = 1;
    return p;
  }
  double mx = *std::max_element(l.begin(), l.end());
  double sum = 0;
  for (size_t i = 0; i < vocab; ++i)
    sum += p[i] = std::exp((l[i] - mx) / params.temperature);
  for (double &x : p)
    x /= sum;
  auto renormalize = [&] {
    double s = std::accumulate(p.begin(), p.end(), 0.0);
    for (double &x : p)
      x /= s;
  };
  double pmax = *std::max_element(p.begin(), p.end());
  for (double &x : p)
    if (x < params.minP * pmax)
      x = 0;
  renormalize();
  std::vector<size_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p[a] > p[b]; });
  if (params.topK > 0 && static_cast<size_t>(params.topK) < vocab) {
    double kth = p[order[params.topK - 1]];
    for (double &x : p)
      if (x < kth)
        x = 0;
    renormalize();
  }
  double cumulative = 0;
  for (size_t i : order) {
    if (cumulative >= params.topP)
      p[i] = 0;
    cumulative += p[i];
  }
  renormalize();
  return p;
}

std::vector<double> probsOf(const std::vector<double> &processed) {
  double lse = logSumExp(processed);
  std::vector<double> p;
  for (double l : processed)
    p.push_back(std::exp(l - lse));
  return p;
}

std::vector<float> randomLogits(std::mt19937 &rng, size_t vocab) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(vocab);
  for (float &l : logits)
    l = normal(rng);
  return logits;
}

TEST(RuntimeSampler, MatchesReferenceOnRandomRows) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    size_t vocab = 1 + rng() % 64;
    std::vector<float> logits = randomLogits(rng, vocab);
    SamplingParams params;
    params.temperature = trial % 5 == 0 ? 0.0f : 0.2f + (rng() % 20) / 10.0f;
    params.topK = static_cast<int32_t>(rng() % 3 == 0 ? 0 : rng() % 70);
    params.topP = rng() % 2 ? 1.0f : 0.05f + (rng() % 95) / 100.0f;
    params.minP = rng() % 2 ? 0.0f : (rng() % 50) / 100.0f;
    params.repetitionPenalty = rng() % 2 ? 1.0f : 0.5f + (rng() % 15) / 10.0f;
    params.presencePenalty = rng() % 2 ? 0.0f : (rng() % 40) / 10.0f - 2.0f;
    params.frequencyPenalty = rng() % 2 ? 0.0f : (rng() % 40) / 10.0f - 2.0f;
    ASSERT_TRUE(params.validate(vocab).isOk());
    std::vector<TokenId> prompt, output;
    for (size_t i = rng() % 10; i > 0; --i)
      prompt.push_back(static_cast<TokenId>(rng() % vocab));
    for (size_t i = rng() % 10; i > 0; --i)
      output.push_back(static_cast<TokenId>(rng() % vocab));

    SampleRow row{&params, &prompt, &output, 99, 5};
    Expected<std::vector<double>> processed =
        processLogits(logits.data(), vocab, row);
    ASSERT_TRUE(processed) << processed.status().message();
    std::vector<double> expected =
        referenceProbs(logits, params, prompt, output);
    Expected<SampledToken> token = sampleRow(logits.data(), vocab, row);
    ASSERT_TRUE(token);
    if (params.isGreedy()) {
      EXPECT_EQ(expected[token->token], 1.0) << "trial " << trial;
      continue;
    }
    std::vector<double> actual = probsOf(*processed);
    for (size_t i = 0; i < vocab; ++i)
      ASSERT_NEAR(actual[i], expected[i], 1e-9)
          << "trial " << trial << " token " << i;
    EXPECT_GT(expected[token->token], 0.0);
  }
}

TEST(RuntimeSampler, DrawFrequenciesFollowTheDistribution) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, kNegInf, 0.5f};
  SamplingParams params;
  params.temperature = 1.0f;
  SampleRow row{&params, nullptr, nullptr, 1234, 0};
  std::vector<double> probs = probsOf(*processLogits(logits.data(), 5, row));
  std::vector<int> counts(5, 0);
  const int n = 20000;
  for (int position = 0; position < n; ++position) {
    row.position = position;
    ++counts[sampleRow(logits.data(), 5, row)->token];
  }
  EXPECT_EQ(counts[3], 0);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(counts[i] / double(n), probs[i], 0.015) << "token " << i;
}

TEST(RuntimeSampler, GreedyTakesTheFirstMaximum) {
  std::vector<float> logits = {1.0f, 3.0f, 3.0f, kNegInf};
  SamplingParams params;
  params.temperature = 0;
  SampleRow row{&params, nullptr, nullptr, 0, 0};
  EXPECT_EQ(sampleRow(logits.data(), 4, row)->token, 1);
  std::vector<float> equal(6, 0.5f);
  EXPECT_EQ(sampleRow(equal.data(), 6, row)->token, 0);
}

// Tests that greedy rows without penalties or logprobs, which take the
// row's first maximum without a processed copy, give the token and the
// errors the processed path gives: random rows with ties, masked tokens
// and zeros of both signs, faulty rows, and history outside the vocabulary
// (checked with or without penalties).
// A plain draw (temperature, min-p, top-k, top-p alone) with the sampler's
// own uniform (drawWithUniform, what a device sampler is held to) draws
// sampleRow's token, and a row the sampler refuses is refused.
TEST(RuntimeSampler, PlainDrawWithTheSamplersUniformIsSampleRow) {
  SamplingParams drawn;
  drawn.temperature = 0.7f;
  drawn.topK = 9;
  drawn.topP = 0.85f;
  SamplingParams minP = drawn;
  minP.minP = 0.05f;
  std::mt19937 rng(5);
  for (const SamplingParams *p : {&drawn, &minP})
    for (size_t vocab : {1u, 3u, 100u, 4096u})
      for (uint64_t position = 0; position < 20; ++position) {
        std::vector<float> logits = randomLogits(rng, vocab);
        SampleRow row{p, nullptr, nullptr, 42, position};
        Expected<SampledToken> want = sampleRow(logits.data(), vocab, row);
        Expected<TokenId> got = drawWithUniform(logits.data(), vocab, *p,
                                                philoxUniform(42, position));
        ASSERT_TRUE(want && got);
        EXPECT_EQ(*got, want->token) << vocab << " " << position;
      }
  std::vector<float> bad = {0.0f, std::nanf(""), 1.0f};
  EXPECT_FALSE(bool(drawWithUniform(bad.data(), bad.size(), drawn, 0.5)));
}

TEST(RuntimeSampler, PlainGreedyIsTheProcessedArgmax) {
  SamplingParams greedy;
  greedy.temperature = 0;
  ASSERT_TRUE(plainGreedy(greedy));
  SamplingParams withLogprobs = greedy, sampled;
  withLogprobs.logprobs = 0;
  EXPECT_FALSE(plainGreedy(withLogprobs));
  EXPECT_FALSE(plainGreedy(sampled));
  for (int which = 0; which < 3; ++which) {
    SamplingParams penalised = greedy;
    (which == 0   ? penalised.repetitionPenalty
     : which == 1 ? penalised.presencePenalty
                  : penalised.frequencyPenalty) += 0.5f;
    EXPECT_FALSE(plainGreedy(penalised)) << which;
  }
  std::mt19937 rng(11);
  SampleRow row{&greedy, nullptr, nullptr, 0, 0};
  for (size_t vocab : {1u, 2u, 17u, 4096u}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<float> logits = randomLogits(rng, vocab);
      // Ties (a few equal maxima), masked tokens and signed zeros.
      for (size_t i = 0; i < vocab; i += 5)
        logits[i] = trial % 3 == 0 ? kNegInf : logits[0];
      if (trial % 4 == 0)
        for (size_t i = 0; i < vocab; ++i)
          logits[i] = i % 2 ? -0.0f : 0.0f;
      if (std::all_of(logits.begin(), logits.end(),
                      [](float x) { return x == kNegInf; }))
        logits[vocab - 1] = 0.0f;
      Expected<SampledToken> fast = sampleRow(logits.data(), vocab, row);
      Expected<std::vector<double>> processed =
          processLogits(logits.data(), vocab, row);
      ASSERT_TRUE(fast && processed);
      EXPECT_EQ(fast->token, argmaxProcessed(*processed)) << vocab;
      EXPECT_EQ(fast->token, firstMaximum(logits.data(), vocab));
      EXPECT_FALSE(fast->hasLogprobs);
    }
  }
  std::vector<TokenId> outside = {7};
  SampleRow badHistory{&greedy, &outside, nullptr, 0, 0};
  std::vector<float> two = {0.0f, 1.0f};
  for (const std::vector<float> &bad :
       {std::vector<float>{0.0f, NAN}, std::vector<float>{INFINITY, 0.0f},
        std::vector<float>{kNegInf, kNegInf}}) {
    Expected<SampledToken> fast = sampleRow(bad.data(), 2, row);
    Expected<std::vector<double>> processed = processLogits(bad.data(), 2, row);
    ASSERT_FALSE(fast);
    ASSERT_FALSE(processed);
    EXPECT_EQ(fast.status().message(), processed.status().message());
  }
  Expected<SampledToken> fast = sampleRow(two.data(), 2, badHistory);
  ASSERT_FALSE(fast);
  EXPECT_NE(fast.status().message().find("token id 7"), std::string::npos);
}

TEST(RuntimeSampler, VocabularyOfOne) {
  float logit = -3.0f;
  SamplingParams params;
  params.logprobs = 5;
  SampleRow row{&params, nullptr, nullptr, 1, 2};
  Expected<SampledToken> token = sampleRow(&logit, 1, row);
  ASSERT_TRUE(token);
  EXPECT_EQ(token->token, 0);
  EXPECT_FLOAT_EQ(token->logprobs.logprob, 0.0f);
  ASSERT_EQ(token->logprobs.top.size(), 1u);
}

TEST(RuntimeSampler, AllEqualLogitsSampleEveryToken) {
  std::vector<float> logits(8, 1.0f);
  SamplingParams params;
  std::set<TokenId> seen;
  for (uint64_t position = 0; position < 400; ++position) {
    SampleRow row{&params, nullptr, nullptr, 5, position};
    seen.insert(sampleRow(logits.data(), 8, row)->token);
  }
  EXPECT_EQ(seen.size(), 8u);
  // top-k keeps ties at the threshold: all 8 survive k = 3.
  params.topK = 3;
  SampleRow row{&params, nullptr, nullptr, 5, 0};
  std::vector<double> processed = *processLogits(logits.data(), 8, row);
  EXPECT_EQ(std::count(processed.begin(), processed.end(), -INFINITY), 0);
}

TEST(RuntimeSampler, MaskedTokensAreNeverSampled) {
  std::vector<float> logits = {kNegInf, 0.0f, kNegInf, 0.0f};
  SamplingParams params;
  for (uint64_t position = 0; position < 200; ++position) {
    SampleRow row{&params, nullptr, nullptr, 9, position};
    TokenId token = sampleRow(logits.data(), 4, row)->token;
    EXPECT_TRUE(token == 1 || token == 3);
  }
}

TEST(RuntimeSampler, RejectsRowsWithoutAFiniteLogit) {
  SamplingParams params;
  SampleRow row{&params, nullptr, nullptr, 0, 0};
  std::vector<float> allMasked(3, kNegInf);
  Expected<SampledToken> token = sampleRow(allMasked.data(), 3, row);
  ASSERT_FALSE(token);
  EXPECT_NE(token.status().message().find("-inf"), std::string::npos);
  std::vector<float> nan = {0.0f, NAN};
  EXPECT_FALSE(sampleRow(nan.data(), 2, row));
  std::vector<float> posInf = {0.0f, INFINITY};
  EXPECT_FALSE(sampleRow(posInf.data(), 2, row));

  std::vector<float> batch = {0.0f, 1.0f, kNegInf, kNegInf};
  std::vector<SampleRow> rows = {row, row};
  Expected<std::vector<SampledToken>> tokens =
      sampleBatch(batch.data(), 2, rows);
  ASSERT_FALSE(tokens);
  EXPECT_NE(tokens.status().message().find("row 1"), std::string::npos);
}

TEST(RuntimeSampler, CheckLogitsRowFindsTheFirstFault) {
  auto check = [](std::vector<float> row) {
    return checkLogitsRow(row.data(), row.size());
  };
  EXPECT_TRUE(check({0.0f, kNegInf, -1e30f, 3.0f}).ok());
  EXPECT_TRUE(check({kNegInf, kNegInf, -FLT_MAX}).ok());
  LogitsCheck nan = check({1.0f, INFINITY, -NAN, NAN});
  EXPECT_EQ(nan.fault, LogitsFault::NaN); // NaN wins over +inf
  EXPECT_EQ(nan.index, 2u);
  LogitsCheck inf = check({1.0f, kNegInf, INFINITY});
  EXPECT_EQ(inf.fault, LogitsFault::PosInf);
  EXPECT_EQ(inf.index, 2u);
  EXPECT_EQ(check({kNegInf, kNegInf}).fault, LogitsFault::AllNegInf);
  EXPECT_EQ(check({}).fault, LogitsFault::AllNegInf);
  EXPECT_STREQ(logitsFaultName(LogitsFault::AllNegInf), "only -inf");
  // A long row: the vectorised pass and its tail both see the fault.
  for (size_t at : {0u, 7u, 63u, 64u, 999u}) {
    std::vector<float> row(1000, 0.5f);
    row[at] = NAN;
    EXPECT_EQ(check(row).index, at);
  }
}

TEST(RuntimeSampler, RejectsHistoryOutsideTheVocabulary) {
  std::vector<float> logits = {0.0f, 1.0f};
  SamplingParams params;
  params.repetitionPenalty = 1.2f;
  std::vector<TokenId> prompt = {5};
  SampleRow row{&params, &prompt, nullptr, 0, 0};
  EXPECT_FALSE(sampleRow(logits.data(), 2, row));
}

TEST(RuntimeSampler, TopKLargerThanVocabularyKeepsEverything) {
  std::mt19937 rng(3);
  std::vector<float> logits = randomLogits(rng, 10);
  SamplingParams all, big;
  big.topK = 1000;
  SampleRow a{&all, nullptr, nullptr, 1, 1}, b{&big, nullptr, nullptr, 1, 1};
  EXPECT_EQ(*processLogits(logits.data(), 10, a),
            *processLogits(logits.data(), 10, b));
}

TEST(RuntimeSampler, TopKOneAndTinyTopPAreGreedy) {
  std::mt19937 rng(4);
  std::vector<float> logits = randomLogits(rng, 32);
  TokenId best = static_cast<TokenId>(
      std::max_element(logits.begin(), logits.end()) - logits.begin());
  SamplingParams topK, topP;
  topK.topK = 1;
  topP.topP = 1e-6f;
  for (uint64_t position = 0; position < 50; ++position) {
    SampleRow a{&topK, nullptr, nullptr, 8, position};
    SampleRow b{&topP, nullptr, nullptr, 8, position};
    EXPECT_EQ(sampleRow(logits.data(), 32, a)->token, best);
    EXPECT_EQ(sampleRow(logits.data(), 32, b)->token, best);
  }
}

TEST(RuntimeSampler, PenaltiesFollowOpenAISemantics) {
  std::vector<double> logits = {2.0, -2.0, 2.0, 2.0};
  SamplingParams params;
  params.repetitionPenalty = 2.0f;
  params.presencePenalty = 0.5f;
  params.frequencyPenalty = 0.25f;
  // Token 0 in the prompt only; 1 in the prompt and the output once;
  // 2 in the output twice; 3 nowhere.
  applyPenalties(logits, params, {0, 1}, {1, 2, 2});
  EXPECT_DOUBLE_EQ(logits[0], 1.0);               // Repetition only.
  EXPECT_DOUBLE_EQ(logits[1], -4.0 - 0.5 - 0.25); // Negative: multiplied.
  EXPECT_DOUBLE_EQ(logits[2], 1.0 - 0.5 - 0.5);
  EXPECT_DOUBLE_EQ(logits[3], 2.0);
}

// The list a device applies the penalties from: each token of the output
// once with its count, the prompt's at 0 where only the repetition penalty
// reads them, in id order.
TEST(RuntimeSampler, PenaltyListHoldsWhatThePenaltiesTouch) {
  SamplingParams params;
  params.frequencyPenalty = 0.5f;
  std::vector<int32_t> tokens, counts;
  const std::vector<TokenId> prompt = {9, 1, 9};
  penaltyList(params, prompt, {4, 2, 4, 2, 7}, tokens, counts);
  EXPECT_EQ(tokens, (std::vector<int32_t>{2, 4, 7}));
  EXPECT_EQ(counts, (std::vector<int32_t>{2, 2, 1}));
  params.repetitionPenalty = 1.3f; // the prompt's tokens too
  penaltyList(params, prompt, {4, 2, 4, 2, 7, 4}, tokens, counts);
  EXPECT_EQ(tokens, (std::vector<int32_t>{1, 2, 4, 7, 9}));
  EXPECT_EQ(counts, (std::vector<int32_t>{0, 2, 3, 1, 0}));
  penaltyList(params, {}, {}, tokens, counts);
  EXPECT_TRUE(tokens.empty());
  EXPECT_TRUE(counts.empty());
}

TEST(RuntimeSampler, LogprobsDescribeTheSampledDistribution) {
  std::mt19937 rng(11);
  std::vector<float> logits = randomLogits(rng, 40);
  SamplingParams params;
  params.temperature = 0.7f;
  params.topK = 10;
  params.logprobs = 5;
  SampleRow row{&params, nullptr, nullptr, 21, 3};
  SampledToken token = *sampleRow(logits.data(), 40, row);
  ASSERT_TRUE(token.hasLogprobs);
  std::vector<double> probs = probsOf(*processLogits(logits.data(), 40, row));
  EXPECT_NEAR(token.logprobs.logprob, std::log(probs[token.token]), 1e-5);
  ASSERT_EQ(token.logprobs.top.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    auto [id, logprob] = token.logprobs.top[i];
    EXPECT_NEAR(logprob, std::log(probs[id]), 1e-5);
    if (i > 0) {
      EXPECT_GE(token.logprobs.top[i - 1].second, logprob);
    }
  }
  std::vector<double> sorted = probs;
  std::sort(sorted.rbegin(), sorted.rend());
  EXPECT_NEAR(std::exp(token.logprobs.top[0].second), sorted[0], 1e-6);

  // Greedy logprobs are those of the (penalised) model distribution.
  params.temperature = 0;
  params.logprobs = 0;
  SampledToken greedy = *sampleRow(logits.data(), 40, row);
  double lse = 0, mx = *std::max_element(logits.begin(), logits.end());
  for (float l : logits)
    lse += std::exp(l - mx);
  EXPECT_NEAR(greedy.logprobs.logprob,
              logits[greedy.token] - mx - std::log(lse), 1e-5);
  EXPECT_TRUE(greedy.logprobs.top.empty());
}

TEST(RuntimeSampler, SeededRowsIgnoreTheRestOfTheBatch) {
  std::mt19937 rng(12);
  const size_t vocab = 50;
  std::vector<std::vector<float>> rowsLogits;
  std::vector<SamplingParams> params(6);
  for (size_t i = 0; i < 6; ++i) {
    rowsLogits.push_back(randomLogits(rng, vocab));
    params[i].temperature = 1.0f + 0.1f * i;
    params[i].topP = 0.9f;
  }
  auto run = [&](const std::vector<size_t> &which) {
    std::vector<float> flat;
    std::vector<SampleRow> rows;
    for (size_t i : which) {
      flat.insert(flat.end(), rowsLogits[i].begin(), rowsLogits[i].end());
      rows.push_back({&params[i], nullptr, nullptr, 1000 + i, 17});
    }
    std::map<size_t, TokenId> tokens;
    std::vector<SampledToken> sampled = *sampleBatch(flat.data(), vocab, rows);
    for (size_t k = 0; k < which.size(); ++k)
      tokens[which[k]] = sampled[k].token;
    return tokens;
  };
  std::map<size_t, TokenId> all = run({0, 1, 2, 3, 4, 5});
  for (const std::vector<size_t> &mix :
       {std::vector<size_t>{3}, {5, 3, 1}, {2, 0}, {4, 1, 0, 2}}) {
    for (auto [i, token] : run(mix))
      EXPECT_EQ(token, all[i]) << "row " << i;
  }
}

} // namespace
