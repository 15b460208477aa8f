//===- SpecVerifyTest.cpp - Speculative-decoding verification -------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Reference/Reference.h"
#include "codegen/CPU/SpecVerify.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();
/// The largest float below 1: the top end of every inverse-CDF draw.
constexpr float kAlmostOne = 1.0f - 0x1p-24f;

/// One batch of verification inputs and the outputs a call writes.
struct Inputs {
  int64_t S = 0, K = 0, V = 1;
  std::vector<float> logits;   ///< [S, K+1, V]
  std::vector<int32_t> drafts; ///< [S, K]
  std::vector<float> probs;    ///< [S, K, V], or empty: n-gram drafts
  std::vector<float> uniforms; ///< [S, K+1], or empty: greedy
  std::vector<int32_t> accepted, tokens;

  Inputs() = default;
  Inputs(int64_t s, int64_t k, int64_t v)
      : S(s), K(k), V(v), logits(size_t(s * (k + 1) * v), 0.0f),
        drafts(size_t(s * k), -1) {}

  float &logit(int64_t s, int64_t j, int64_t i) {
    return logits[size_t((s * (K + 1) + j) * V + i)];
  }
  float &prob(int64_t s, int64_t j, int64_t i) {
    return probs[size_t((s * K + j) * V + i)];
  }
  int32_t &draft(int64_t s, int64_t j) { return drafts[size_t(s * K + j)]; }
  float &uniform(int64_t s, int64_t j) {
    return uniforms[size_t(s * (K + 1) + j)];
  }
  void withUniforms(float u) { uniforms.assign(size_t(S * (K + 1)), u); }
  void withProbs(float q) { probs.assign(size_t(S * K * V), q); }

  /// Arguments that write into accepted/tokens, reset to `fill`.
  SpecVerifyArgs args(int32_t fill = -7) {
    accepted.assign(size_t(std::max<int64_t>(S, 0)), fill);
    tokens.assign(size_t(std::max<int64_t>(S * (K + 1), 0)), fill);
    SpecVerifyArgs a;
    a.numSeqs = S;
    a.numDraft = K;
    a.vocab = V;
    a.targetLogits = logits.data();
    a.draftTokens = drafts.data();
    a.draftProbs = probs.empty() ? nullptr : probs.data();
    a.uniforms = uniforms.empty() ? nullptr : uniforms.data();
    a.accepted = accepted.data();
    a.tokens = tokens.data();
    return a;
  }

  int64_t numDrafts(int64_t s) const {
    int64_t k = 0;
    while (k < K && drafts[size_t(s * K + k)] != -1)
      ++k;
    return k;
  }
};

Status runGreedy(Inputs &in, ThreadPool &pool = serialPool()) {
  return specVerifyGreedy(in.args(), pool);
}
Status runSample(Inputs &in, ThreadPool &pool = serialPool()) {
  return specVerifySample(in.args(), pool);
}

/// A float uniform in [0, 1) with 24 random bits, as the runtime draws them.
float uniformFloat(std::mt19937_64 &rng) {
  return float(rng() >> 40) * 0x1p-24f;
}

/// Inverse-CDF draw from weights w (not necessarily normalised).
int32_t drawFrom(const std::vector<double> &w, std::mt19937_64 &rng) {
  double total = 0;
  for (double x : w)
    total += x;
  double t = double(rng() >> 11) * 0x1p-53 * total, run = 0;
  int32_t last = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0)
      continue;
    run += w[i];
    last = int32_t(i);
    if (run > t)
      break;
  }
  return last;
}

std::vector<double> softmaxOf(const float *row, int64_t V) {
  double m = -INFINITY, sum = 0;
  for (int64_t i = 0; i < V; ++i)
    m = std::max(m, double(row[i]));
  std::vector<double> p(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i)
    sum += p[i] = std::exp(double(row[i]) - m);
  for (double &x : p)
    x /= sum;
  return p;
}

int32_t firstArgmax(const float *row, int64_t V) {
  return int32_t(std::max_element(row, row + V) - row);
}

//===----------------------------------------------------------------------===//
// Random batches compared with the reference
//===----------------------------------------------------------------------===//

struct GenOptions {
  bool sample = false;
  bool withProbs = false;
  double maskFraction = 0; ///< share of -inf logits
  bool coarse = false;     ///< small-integer logits: many ties
};

/// Random rows (several temperatures, optional masks and ties), a quarter
/// of the sequences padded to fewer drafts, and drafts that the target
/// often agrees with, so that acceptance chains of every length occur.
Inputs randomInputs(int64_t S, int64_t K, int64_t V, uint64_t seed,
                    const GenOptions &o) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float scales[] = {0.3f, 1.0f, 4.0f};
  Inputs in(S, K, V);
  if (o.withProbs)
    in.probs.assign(size_t(S * K * V), 0.0f);
  for (int64_t s = 0; s < S; ++s) {
    int64_t k = rng() % 4 == 0 ? int64_t(rng() % uint64_t(K + 1)) : K;
    for (int64_t j = 0; j <= K; ++j) {
      float scale = scales[rng() % 3];
      float *row = &in.logit(s, j, 0);
      for (int64_t i = 0; i < V; ++i) {
        row[i] = o.coarse ? float(int64_t(rng() % 5) - 2) : normal(rng) * scale;
        if (uniformFloat(rng) < o.maskFraction)
          row[i] = kMasked;
      }
      if (std::all_of(row, row + V, [](float l) { return l == kMasked; }))
        row[rng() % uint64_t(V)] = 0.5f;
      if (j >= K)
        continue;
      std::vector<double> p = softmaxOf(row, V);
      if (o.withProbs) {
        // The draft's distribution: the target's, blurred, with some mass
        // on tokens the target masks and some tokens the draft masks.
        std::vector<double> q(static_cast<size_t>(V));
        double total = 0;
        for (int64_t i = 0; i < V; ++i) {
          q[i] = (std::pow(p[i], 0.7) + 0.02 / double(V)) *
                 std::exp(0.5 * normal(rng));
          if (rng() % 8 == 0)
            q[i] = 0;
          total += q[i];
        }
        if (total == 0)
          q[0] = total = 1;
        for (int64_t i = 0; i < V; ++i)
          in.prob(s, j, i) = float(q[i] / total);
        std::vector<double> qf(static_cast<size_t>(V));
        for (int64_t i = 0; i < V; ++i)
          qf[i] = in.prob(s, j, i);
        if (j < k)
          in.draft(s, j) = drawFrom(qf, rng); // q(x) > 0 as a float
        continue;
      }
      if (j >= k)
        continue;
      uint64_t pick = rng() % 10;
      in.draft(s, j) = pick < 6   ? firstArgmax(row, V)
                       : pick < 8 ? drawFrom(p, rng)
                                  : int32_t(rng() % uint64_t(V));
    }
  }
  if (o.sample) {
    in.uniforms.resize(size_t(S * (K + 1)));
    for (float &u : in.uniforms)
      u = uniformFloat(rng);
  }
  return in;
}

/// What every result must satisfy whatever the randomness: kept drafts
/// first, then one token the target gives probability > 0, then -1.
void expectWellFormed(const Inputs &in) {
  for (int64_t s = 0; s < in.S; ++s) {
    int64_t k = in.numDrafts(s), acc = in.accepted[size_t(s)];
    ASSERT_GE(acc, 0) << "sequence " << s;
    ASSERT_LE(acc, k) << "sequence " << s;
    const int32_t *t = &in.tokens[size_t(s * (in.K + 1))];
    for (int64_t j = 0; j < acc; ++j)
      EXPECT_EQ(t[j], in.drafts[size_t(s * in.K + j)]) << "sequence " << s;
    ASSERT_GE(t[acc], 0) << "sequence " << s;
    ASSERT_LT(t[acc], in.V) << "sequence " << s;
    EXPECT_NE(in.logits[size_t((s * (in.K + 1) + acc) * in.V + t[acc])],
              kMasked)
        << "sequence " << s << " emitted a masked token";
    for (int64_t j = acc + 1; j <= in.K; ++j)
      EXPECT_EQ(t[j], -1) << "sequence " << s;
  }
}

struct Shape {
  int64_t S, K, V;
};

// Bonus only (K = 0), vocab 1, one sequence, ties (coarse), a batch large
// enough to be split over the pool, and a 150k vocabulary.
const Shape kShapes[] = {{1, 0, 1},    {1, 3, 1},    {2, 0, 7},
                         {1, 1, 2},    {8, 4, 17},   {33, 3, 64},
                         {300, 4, 50}, {6, 5, 1000}, {3, 2, 150000}};

TEST(SpecVerify, GreedyMatchesReference) {
  uint64_t seed = 1;
  for (const Shape &sh : kShapes)
    for (double mask : {0.0, 0.3})
      for (bool coarse : {false, true}) {
        GenOptions o;
        o.maskFraction = mask;
        o.coarse = coarse;
        Inputs in = randomInputs(sh.S, sh.K, sh.V, seed++, o);
        Inputs want = in;
        ref::specVerifyGreedy(want.args());
        ASSERT_TRUE(runGreedy(in, serialPool()).ok());
        expectWellFormed(in);
        EXPECT_EQ(in.accepted, want.accepted)
            << sh.S << "x" << sh.K << "x" << sh.V;
        EXPECT_EQ(in.tokens, want.tokens);
        std::vector<int32_t> serialTokens = in.tokens;
        ASSERT_TRUE(runGreedy(in, parallelPool()).ok());
        EXPECT_EQ(in.tokens, serialTokens);
        EXPECT_EQ(in.accepted, want.accepted);
      }
}

// The reference normalises the residual and compares its CDF with u; the
// kernel compares unnormalised sums with u * mass. They can legitimately
// differ where a decision lies within rounding (~1e-16 per term, so below
// 1e-11 for 150k terms) of its threshold; the reference reports how close
// each sequence came, and sequences closer than 1e-9 are compared only for
// well-formedness. Random inputs land there with probability ~1e-9 per
// decision, so more than 1% of them skipped means a bug.
TEST(SpecVerify, SampleMatchesReference) {
  uint64_t seed = 100;
  int64_t compared = 0, skipped = 0;
  for (const Shape &sh : kShapes)
    for (bool withProbs : {false, true})
      for (double mask : {0.0, 0.3}) {
        GenOptions o;
        o.sample = true;
        o.withProbs = withProbs;
        o.maskFraction = mask;
        Inputs in = randomInputs(sh.S, sh.K, sh.V, seed++, o);
        Inputs want = in;
        std::vector<double> margins(size_t(sh.S));
        ref::specVerifySample(want.args(), margins.data());
        ASSERT_TRUE(runSample(in, serialPool()).ok());
        expectWellFormed(in);
        for (int64_t s = 0; s < sh.S; ++s) {
          if (margins[size_t(s)] < 1e-9) {
            ++skipped;
            continue;
          }
          ++compared;
          EXPECT_EQ(in.accepted[size_t(s)], want.accepted[size_t(s)])
              << sh.S << "x" << sh.K << "x" << sh.V << " sequence " << s;
          for (int64_t j = 0; j <= sh.K; ++j)
            EXPECT_EQ(in.tokens[size_t(s * (sh.K + 1) + j)],
                      want.tokens[size_t(s * (sh.K + 1) + j)])
                << sh.S << "x" << sh.K << "x" << sh.V << " sequence " << s
                << " position " << j;
        }
        std::vector<int32_t> serialTokens = in.tokens, serialAcc = in.accepted;
        ASSERT_TRUE(runSample(in, parallelPool()).ok());
        EXPECT_EQ(in.tokens, serialTokens);
        EXPECT_EQ(in.accepted, serialAcc);
      }
  EXPECT_LE(skipped * 100, compared) << skipped << " ambiguous sequences";
}

// Tests that the random batches reach every outcome: all kept, first
// rejected, rejections in between.
TEST(SpecVerify, RandomBatchesCoverEveryAcceptanceLength) {
  GenOptions o;
  o.sample = true;
  o.withProbs = true;
  Inputs in = randomInputs(300, 4, 50, 7, o);
  ASSERT_TRUE(runSample(in).ok());
  std::vector<int> seen(5, 0);
  for (int64_t s = 0; s < in.S; ++s)
    if (in.numDrafts(s) == 4)
      ++seen[size_t(in.accepted[size_t(s)])];
  for (int n : seen)
    EXPECT_GT(n, 0);
}

//===----------------------------------------------------------------------===//
// Hand-computed cases
//===----------------------------------------------------------------------===//

TEST(SpecVerify, EmptyBatch) {
  SpecVerifyArgs a; // S = 0, every pointer null
  a.vocab = 5;
  a.numDraft = 3;
  EXPECT_TRUE(specVerifyGreedy(a).ok());
  EXPECT_TRUE(specVerifySample(a).ok());
}

TEST(SpecVerify, GreedyKeepsMatchesThenCorrects) {
  Inputs in(3, 3, 4);
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t j = 0; j <= 3; ++j)
      in.logit(s, j, (s + j) % 4) = 2.0f; // argmax of row j: (s + j) % 4
  // Sequence 0: all kept, bonus from row 3. Sequence 1: the first draft
  // rejected. Sequence 2: two kept, then the correction.
  for (int64_t j = 0; j < 3; ++j)
    in.draft(0, j) = int32_t(j % 4);
  in.draft(1, 0) = 0;
  in.draft(1, 1) = 3;
  in.draft(1, 2) = 0;
  in.draft(2, 0) = 2;
  in.draft(2, 1) = 3;
  in.draft(2, 2) = 1;
  ASSERT_TRUE(runGreedy(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{3, 0, 2}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{0, 1, 2, 3,    //
                                             1, -1, -1, -1, //
                                             2, 3, 0, -1}));
}

TEST(SpecVerify, GreedyTiesTakeTheFirstMaximum) {
  Inputs in(1, 1, 4);
  float row[] = {1, 3, 3, 2};
  std::copy(row, row + 4, &in.logit(0, 0, 0));
  std::copy(row, row + 4, &in.logit(0, 1, 0));
  in.draft(0, 0) = 2; // ties with 1, which comes first: rejected
  ASSERT_TRUE(runGreedy(in).ok());
  EXPECT_EQ(in.accepted[0], 0);
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{1, -1}));
  in.draft(0, 0) = 1;
  ASSERT_TRUE(runGreedy(in).ok());
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{1, 1}));
}

// Tests padded sequences: no drafts at all (the bonus only) and fewer
// drafts than K. Unused rows hold NaN and unused uniforms junk: neither is
// read.
TEST(SpecVerify, PaddedSequencesReadOnlyTheirRows) {
  for (bool sample : {false, true}) {
    Inputs in(2, 3, 3);
    std::fill(in.logits.begin(), in.logits.end(), NAN);
    for (int64_t j = 0; j <= 1; ++j)
      for (int64_t i = 0; i < 3; ++i)
        in.logit(0, j, i) = i == 2 ? 30.0f : 0.0f; // p(2) ~ 1
    for (int64_t i = 0; i < 3; ++i)
      in.logit(1, 0, i) = i == 1 ? 30.0f : 0.0f;
    in.draft(0, 0) = 2; // sequence 0: one draft; sequence 1: none
    if (sample) {
      in.withUniforms(5.0f); // not in [0, 1): must not be read
      in.uniform(0, 0) = 0.5f;
      in.uniform(0, 3) = 0.5f;
      in.uniform(1, 3) = 0.5f;
    }
    ASSERT_TRUE((sample ? runSample(in) : runGreedy(in)).ok());
    EXPECT_EQ(in.accepted, (std::vector<int32_t>{1, 0}));
    EXPECT_EQ(in.tokens, (std::vector<int32_t>{2, 2, -1, -1, 1, -1, -1, -1}));
  }
}

TEST(SpecVerify, VocabularyOfOne) {
  Inputs in(2, 2, 1);
  in.draft(0, 0) = in.draft(0, 1) = 0;
  in.draft(1, 0) = 0;
  ASSERT_TRUE(runGreedy(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{0, 0, 0, 0, 0, -1}));
  in.withUniforms(kAlmostOne);
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{2, 1}));
  in.withProbs(1.0f);
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{0, 0, 0, 0, 0, -1}));
}

// Tests the bonus draw by the CDF of p = (1/4, 3/4).
TEST(SpecVerify, SampleBonusOnly) {
  Inputs in(4, 0, 2);
  float us[] = {0.0f, 0.2f, 0.3f, kAlmostOne};
  in.withUniforms(0);
  for (int64_t s = 0; s < 4; ++s) {
    in.logit(s, 0, 0) = 0.0f;
    in.logit(s, 0, 1) = std::log(3.0f);
    in.uniform(s, 0) = us[s];
  }
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{0, 0, 1, 1}));
}

// Tests n-gram drafts (q one-hot): x is kept iff u < p(x); after a
// rejection the token comes from p without x.
TEST(SpecVerify, SampleOneHotDrafts) {
  Inputs in(3, 1, 3);
  for (int64_t s = 0; s < 3; ++s) {
    float row[] = {std::log(0.2f), std::log(0.5f), std::log(0.3f)};
    std::copy(row, row + 3, &in.logit(s, 0, 0));
    in.logit(s, 1, 2) = 1.0f; // bonus row: argmax 2, p = (.21, .21, .58)
    in.draft(s, 0) = 1;
  }
  in.withUniforms(0);
  in.uniform(0, 0) = 0.45f; // kept (0.45 < 0.5); bonus u = 0.9
  in.uniform(0, 1) = 0.9f;
  in.uniform(1, 0) = 0.55f; // rejected; residual (.4, 0, .6): u .3 -> 0
  in.uniform(1, 1) = 0.3f;
  in.uniform(2, 0) = 0.55f; // rejected; u .5 -> 2
  in.uniform(2, 1) = 0.5f;
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{1, 2, 0, -1, 2, -1}));
}

// p = (.4, .1, .3, .2), q = (.1, .6, .1, .2), draft 1: kept iff u < 1/6;
// residual (.3, 0, .2, 0), normalised (.6, 0, .4, 0).
TEST(SpecVerify, SampleResidualFromDraftProbs) {
  Inputs in(3, 1, 4);
  in.withProbs(0);
  in.withUniforms(0);
  float p[] = {0.4f, 0.1f, 0.3f, 0.2f}, q[] = {0.1f, 0.6f, 0.1f, 0.2f};
  float u0[] = {0.15f, 0.2f, 0.2f}, uK[] = {0.0f, 0.5f, 0.7f};
  for (int64_t s = 0; s < 3; ++s) {
    for (int64_t i = 0; i < 4; ++i) {
      in.logit(s, 0, i) = std::log(p[i]);
      in.prob(s, 0, i) = q[i];
    }
    in.draft(s, 0) = 1;
    in.uniform(s, 0) = u0[s];
    in.uniform(s, 1) = uK[s];
  }
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{1, 0, 0, -1, 2, -1}));
}

// q's row sums above 1 and covers p everywhere: the residual is empty, so
// the rejected row draws from p = (.5, .3, .2) instead.
TEST(SpecVerify, SampleEmptyResidualDrawsFromTarget) {
  Inputs in(2, 1, 3);
  in.withProbs(0.9f);
  in.withUniforms(0.9f); // 0.9 * 0.9 >= 0.5: rejected
  for (int64_t s = 0; s < 2; ++s) {
    float p[] = {0.5f, 0.3f, 0.2f};
    for (int64_t i = 0; i < 3; ++i)
      in.logit(s, 0, i) = std::log(p[i]);
    in.draft(s, 0) = 0;
  }
  in.uniform(0, 1) = 0.6f;  // -> 1
  in.uniform(1, 1) = 0.25f; // -> 0
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{1, -1, 0, -1}));
}

// Tests u = 0 and u just below 1 against rows whose first and last tokens
// have probability 0: masked, underflowing (exp(-1000) == 0), or removed
// from the residual.
TEST(SpecVerify, DrawsNeverReturnZeroProbabilityTokens) {
  Inputs in(5, 1, 4);
  in.withUniforms(kAlmostOne);
  float draftRow[] = {kMasked, 0.0f, 0.0f, kMasked}; // p = (0, .5, .5, 0)
  float bonusRow[] = {kMasked, 0.0f, 0.0f, -1000.0f};
  for (int64_t s = 0; s < 5; ++s) {
    std::copy(draftRow, draftRow + 4, &in.logit(s, 0, 0));
    std::copy(bonusRow, bonusRow + 4, &in.logit(s, 1, 0));
  }
  in.draft(0, 0) = 1;
  in.uniform(0, 0) = 0.25f; // kept: the bonus (u ~ 1) comes from row 1
  in.draft(1, 0) = 2;       // rejected: the residual holds token 1 only
  in.draft(2, 0) = 3;       // masked draft: rejected whatever u is
  in.uniform(2, 0) = 0.0f;
  in.draft(3, 0) = 3; // the same with u = 0 for the draw
  in.uniform(3, 0) = 0.0f;
  in.uniform(3, 1) = 0.0f;
  in.draft(4, 0) = 1; // kept, and the bonus drawn with u = 0
  in.uniform(4, 0) = 0.0f;
  in.uniform(4, 1) = 0.0f;
  ASSERT_TRUE(runSample(in).ok());
  EXPECT_EQ(in.accepted, (std::vector<int32_t>{1, 0, 0, 0, 1}));
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{1, 2, 1, -1, 2, -1, 1, -1, 1, 1}));
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// Every draft is the overwhelming favourite of its row (logit 30 against
/// 0), so both kernels keep all drafts and read every row.
Inputs validInputs(bool sample, bool withProbs) {
  Inputs in(3, 3, 8);
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t j = 0; j <= 3; ++j) {
      in.logit(s, j, (s + j) % 8) = 30.0f;
      if (j < 3)
        in.draft(s, j) = int32_t((s + j) % 8);
    }
  if (sample)
    in.withUniforms(0.5f);
  if (withProbs)
    in.withProbs(0.125f);
  return in;
}

/// The call fails, its message holds every part, and no output changed.
void expectError(Inputs &in, bool sample,
                 std::initializer_list<const char *> parts) {
  SpecVerifyArgs a = in.args(/*fill=*/777);
  Status st = sample ? specVerifySample(a, parallelPool())
                     : specVerifyGreedy(a, parallelPool());
  ASSERT_FALSE(st.ok());
  for (const char *part : parts)
    EXPECT_NE(st.message().find(part), std::string::npos)
        << "'" << part << "' not in: " << st.message();
  for (int32_t v : in.accepted)
    EXPECT_EQ(v, 777);
  for (int32_t v : in.tokens)
    EXPECT_EQ(v, 777);
}

TEST(SpecVerifyValidation, ValidInputsPass) {
  for (bool sample : {false, true})
    for (bool withProbs : {false, true}) {
      if (withProbs && !sample)
        continue;
      Inputs in = validInputs(sample, withProbs);
      ASSERT_TRUE((sample ? runSample(in) : runGreedy(in)).ok());
      EXPECT_EQ(in.accepted, (std::vector<int32_t>{3, 3, 3}));
    }
}

TEST(SpecVerifyValidation, Sizes) {
  for (bool sample : {false, true}) {
    Inputs in = validInputs(sample, false);
    in.S = -1;
    SpecVerifyArgs a = in.args();
    a.numSeqs = -1;
    Status st = sample ? specVerifySample(a) : specVerifyGreedy(a);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("numSeqs must be >= 0, got -1"),
              std::string::npos)
        << st.message();
    in = validInputs(sample, false);
    a = in.args();
    a.numDraft = -2;
    st = sample ? specVerifySample(a) : specVerifyGreedy(a);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("numDraft must be >= 0, got -2"),
              std::string::npos)
        << st.message();
    a.numDraft = 3;
    a.vocab = 0;
    st = sample ? specVerifySample(a) : specVerifyGreedy(a);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("vocab must be > 0, got 0"), std::string::npos)
        << st.message();
    a.vocab = int64_t(1) << 62;
    st = sample ? specVerifySample(a) : specVerifyGreedy(a);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("overflows"), std::string::npos)
        << st.message();
    a.vocab = 8;
    a.numDraft = std::numeric_limits<int64_t>::max();
    st = sample ? specVerifySample(a) : specVerifyGreedy(a);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("overflows"), std::string::npos)
        << st.message();
  }
}

TEST(SpecVerifyValidation, NullPointers) {
  struct Field {
    const char *name;
    void (*clear)(SpecVerifyArgs &);
  };
  const Field fields[] = {
      {"targetLogits", [](SpecVerifyArgs &a) { a.targetLogits = nullptr; }},
      {"draftTokens", [](SpecVerifyArgs &a) { a.draftTokens = nullptr; }},
      {"accepted", [](SpecVerifyArgs &a) { a.accepted = nullptr; }},
      {"tokens", [](SpecVerifyArgs &a) { a.tokens = nullptr; }},
  };
  for (bool sample : {false, true})
    for (const Field &f : fields) {
      Inputs in = validInputs(sample, false);
      SpecVerifyArgs a = in.args();
      f.clear(a);
      Status st = sample ? specVerifySample(a) : specVerifyGreedy(a);
      ASSERT_FALSE(st.ok()) << f.name;
      EXPECT_NE(st.message().find(std::string(f.name) + " is null"),
                std::string::npos)
          << st.message();
    }
  Inputs in = validInputs(true, false);
  SpecVerifyArgs a = in.args();
  a.uniforms = nullptr;
  Status st = specVerifySample(a);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("uniforms is null"), std::string::npos)
      << st.message();
  // No drafts: draftTokens may be null.
  a = in.args();
  a.numDraft = 0;
  a.draftTokens = nullptr;
  EXPECT_TRUE(specVerifySample(a).ok());
}

TEST(SpecVerifyValidation, GreedyRejectsSamplingInputs) {
  Inputs in = validInputs(true, true);
  expectError(in, /*sample=*/false,
              {"specVerifyGreedy", "draftProbs and uniforms must be null"});
}

TEST(SpecVerifyValidation, DraftOutsideVocabulary) {
  for (bool sample : {false, true})
    for (int32_t bad : {8, -2}) {
      Inputs in = validInputs(sample, false);
      in.draft(1, 2) = bad;
      std::string token = "token " + std::to_string(bad);
      expectError(in, sample, {"sequence 1, draft 2", token.c_str(), "[0, 8)"});
    }
}

TEST(SpecVerifyValidation, DraftAfterPadding) {
  for (bool sample : {false, true}) {
    Inputs in = validInputs(sample, false);
    in.draft(2, 0) = -1;
    expectError(in, sample,
                {"sequence 2, draft 1", "token 3 follows -1 padding"});
  }
}

TEST(SpecVerifyValidation, TargetRows) {
  for (bool sample : {false, true}) {
    Inputs in = validInputs(sample, false);
    in.logit(1, 2, 5) = NAN;
    expectError(in, sample,
                {"sequence 1, row 2", "target logit 5 is nan", "-inf"});
    in = validInputs(sample, false);
    in.logit(2, 3, 0) = INFINITY;
    expectError(in, sample, {"sequence 2, row 3", "target logit 0 is inf"});
    in = validInputs(sample, false);
    for (int64_t i = 0; i < 8; ++i)
      in.logit(0, 1, i) = kMasked;
    expectError(in, sample,
                {"sequence 0, row 1", "every target logit is -inf"});
  }
}

// Tests that a row past the point where a sequence stops is not read, and
// that of several bad sequences the lowest is reported.
TEST(SpecVerifyValidation, OnlyRowsThatAreReadAndLowestSequence) {
  Inputs in = validInputs(false, false);
  in.draft(1, 0) = 7; // row 0's argmax is 1: sequence 1 stops at row 0
  in.logit(1, 2, 3) = NAN;
  ASSERT_TRUE(runGreedy(in).ok());
  EXPECT_EQ(in.accepted[1], 0);

  // Sequence 17 fails at once; 18 after all its rows (a NaN at the end of
  // its bonus row), so a thread on 18 may fail after 17 did and must not
  // replace its error; 41 and 60 fail too.
  GenOptions o;
  Inputs big = randomInputs(64, 2, 20000, 5, o);
  for (int64_t j = 0; j < 2; ++j)
    big.draft(18, j) = firstArgmax(&big.logit(18, j, 0), big.V);
  big.logit(18, 2, big.V - 1) = NAN;
  for (int64_t s : {17, 41, 60})
    big.logit(s, 0, 0) = NAN;
  for (int rep = 0; rep < 5; ++rep)
    expectError(big, false, {"sequence 17, row 0", "target logit 0 is nan"});
}

TEST(SpecVerifyValidation, Uniforms) {
  for (float bad : {1.0f, -0.25f, NAN, INFINITY}) {
    Inputs in = validInputs(true, false);
    in.uniform(2, 1) = bad;
    expectError(in, true, {"sequence 2, uniform 1", "is outside [0, 1)"});
    in = validInputs(true, false);
    in.uniform(0, 3) = bad; // the draw's column K
    expectError(in, true, {"sequence 0, uniform 3", "is outside [0, 1)"});
  }
  Inputs in = validInputs(true, false);
  in.uniform(1, 0) = 1.0f;
  expectError(in, true, {"uniform 0: 1 is outside"});
}

TEST(SpecVerifyValidation, DraftProbabilities) {
  for (float bad : {-0.5f, NAN, INFINITY}) {
    Inputs in = validInputs(true, true);
    in.prob(1, 2, 6) = bad; // not a draft: found when row 2 is read
    expectError(in, true,
                {"sequence 1, row 2", "draft probability of token 6 is",
                 "finite and >= 0"});
    in = validInputs(true, true);
    in.prob(2, 0, 2) = bad; // sequence 2's first draft
    expectError(in, true,
                {"sequence 2, row 0", "draft probability of token 2 is"});
  }
  Inputs in = validInputs(true, true);
  in.prob(0, 1, 1) = 0.0f;
  expectError(in, true,
              {"sequence 0, row 1", "draft token 1 has draft probability 0"});
}

//===----------------------------------------------------------------------===//
// Losslessness
//===----------------------------------------------------------------------===//

/// Chi-square critical values at p = 1e-6 by degrees of freedom: with an
/// arbitrary seed each comparison fails falsely with probability 1e-6 (the
/// seed is fixed, so the test itself is deterministic).
double chiSquareCritical(int dof) {
  const double crit[] = {0, 23.928, 27.631, 30.665, 33.377};
  EXPECT_GE(dof, 1);
  EXPECT_LE(dof, 4);
  return crit[std::clamp(dof, 1, 4)];
}

/// Pearson's statistic of `counts` against the distribution p; tokens p
/// gives 0 must never occur and do not count as categories.
double chiSquare(const std::vector<int64_t> &counts,
                 const std::vector<double> &p, int &dof) {
  int64_t n = 0;
  for (int64_t c : counts)
    n += c;
  double stat = 0;
  dof = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    double expect = double(n) * p[i];
    stat +=
        (double(counts[i]) - expect) * (double(counts[i]) - expect) / expect;
    ++dof;
  }
  return stat;
}

constexpr int64_t kV = 5, kK = 3;

/// The target's rows p_0..p_K (one token masked in p_1) and the draft's
/// q_0..q_{K-1} (q_1 proposes the token p_1 masks).
const double kTarget[kK + 1][kV] = {{0.35, 0.25, 0.2, 0.15, 0.05},
                                    {0.1, 0.4, 0.0, 0.3, 0.2},
                                    {0.2, 0.2, 0.2, 0.2, 0.2},
                                    {0.05, 0.05, 0.6, 0.1, 0.2}};
const double kDraft[kK][kV] = {{0.1, 0.5, 0.1, 0.2, 0.1},
                               {0.3, 0.2, 0.3, 0.1, 0.1},
                               {0.5, 0.1, 0.1, 0.1, 0.2}};

/// N sequences over the same rows with drafts drawn from the draft rows and
/// seeded uniforms; `oneHot` passes no draft probabilities (an n-gram
/// proposer, whose q is one-hot at the draft whatever drew it).
Inputs losslessInputs(int64_t N, bool oneHot, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Inputs in(N, kK, kV);
  if (!oneHot)
    in.withProbs(0);
  in.uniforms.resize(size_t(N * (kK + 1)));
  for (int64_t s = 0; s < N; ++s) {
    for (int64_t j = 0; j <= kK; ++j)
      for (int64_t i = 0; i < kV; ++i)
        in.logit(s, j, i) =
            kTarget[j][i] > 0 ? float(std::log(kTarget[j][i])) : kMasked;
    for (int64_t j = 0; j < kK; ++j) {
      std::vector<double> q(kDraft[j], kDraft[j] + kV);
      in.draft(s, j) = drawFrom(q, rng);
      if (!oneHot)
        for (int64_t i = 0; i < kV; ++i)
          in.prob(s, j, i) = float(q[size_t(i)]);
    }
    for (int64_t j = 0; j <= kK; ++j)
      in.uniform(s, j) = uniformFloat(rng);
  }
  return in;
}

/// Position j of the output, among sequences that kept j drafts or more,
/// is distributed as p_j: row j is a fresh rejection step whatever came
/// before (the rows here do not depend on the prefix).
void expectLossless(Inputs &in) {
  ASSERT_TRUE(runSample(in, parallelPool()).ok());
  expectWellFormed(in);
  for (int64_t j = 0; j <= kK; ++j) {
    std::vector<int64_t> counts(kV, 0);
    for (int64_t s = 0; s < in.S; ++s)
      if (in.accepted[size_t(s)] >= j)
        ++counts[size_t(in.tokens[size_t(s * (kK + 1) + j)])];
    // The distribution the kernel sees: softmax of the float logits.
    std::vector<double> p = softmaxOf(&in.logit(0, j, 0), kV);
    int dof = 0;
    double stat = chiSquare(counts, p, dof);
    EXPECT_LT(stat, chiSquareCritical(dof)) << "position " << j;
    if (j == 0) {
      // The test can tell p_0 from the draft's q_0 it was proposed from.
      std::vector<double> q(kDraft[0], kDraft[0] + kV);
      EXPECT_GT(chiSquare(counts, q, dof), 100 * chiSquareCritical(dof));
    }
  }
}

TEST(SpecVerifyLossless, DraftProbabilities) {
  Inputs in = losslessInputs(200000, /*oneHot=*/false, 2024);
  expectLossless(in);
}

TEST(SpecVerifyLossless, OneHotDrafts) {
  Inputs in = losslessInputs(200000, /*oneHot=*/true, 2025);
  expectLossless(in);
}

// Tests that a draft whose distribution is the target's is always kept:
// u q(x) < p(x) for every u < 1 when q is p rounded to float.
TEST(SpecVerifyLossless, DraftEqualToTargetKeepsEverything) {
  for (int64_t V : {int64_t(5), int64_t(1000)}) {
    GenOptions o;
    o.sample = true;
    o.maskFraction = 0.2;
    Inputs in = randomInputs(200, 4, V, 77 + uint64_t(V), o);
    std::mt19937_64 rng(99);
    in.withProbs(0);
    for (int64_t s = 0; s < in.S; ++s)
      for (int64_t j = 0; j < in.K; ++j) {
        std::vector<double> p = softmaxOf(&in.logit(s, j, 0), V);
        for (int64_t i = 0; i < V; ++i)
          in.prob(s, j, i) = float(p[size_t(i)]);
        if (j < in.numDrafts(s)) {
          std::vector<double> q(static_cast<size_t>(V));
          for (int64_t i = 0; i < V; ++i)
            q[size_t(i)] = in.prob(s, j, i);
          in.draft(s, j) = drawFrom(q, rng);
        }
      }
    for (int64_t s = 0; s < in.S; ++s)
      in.uniform(s, 0) = kAlmostOne; // the hardest case for row 0
    ASSERT_TRUE(runSample(in).ok());
    for (int64_t s = 0; s < in.S; ++s)
      EXPECT_EQ(in.accepted[size_t(s)], in.numDrafts(s)) << "sequence " << s;
  }
}

} // namespace
