//===- SpecControllerTest.cpp - Choosing k per step -----------------------===//

#include "runtime/SpecDecode/SpecController.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

using namespace folio::spec;

namespace {

/// Drives the controller against a synthetic machine: `cost(batch, k)` is
/// a step's time, and every draft is kept with probability `alpha`, drawn
/// from a fixed-seed generator (the same draws on every run). Returns the k
/// chosen at the end.
size_t settle(SpecController &c, size_t batch, double alpha,
              const std::function<double(size_t, size_t)> &cost,
              int steps = 200) {
  std::mt19937 rng(7);
  auto keep = [&] { return double(rng()) < alpha * 4294967296.0; };
  size_t k = 0;
  for (int i = 0; i < steps; ++i) {
    k = c.chooseK(batch);
    if (k > 0) {
      c.recordCoverage(batch, batch);
      size_t proposed = 0, kept = 0, rejectedRuns = 0;
      for (size_t s = 0; s < batch; ++s) {
        size_t n = 0;
        while (n < k && keep())
          ++n;
        c.recordSequence(k, n);
        proposed += k;
        kept += n;
        rejectedRuns += n < k;
      }
      c.recordAcceptance(proposed, kept, rejectedRuns);
    }
    c.recordTime(batch, k, cost(batch, k));
  }
  return c.chooseK(batch);
}

TEST(RuntimeSpecController, FixedKWhenNotAdaptive) {
  SpecController c(5, /*adaptive=*/false);
  EXPECT_EQ(c.chooseK(1), 5u);
  EXPECT_EQ(c.chooseK(64), 5u);
}

TEST(RuntimeSpecController, SpeculatesDeepWhenVerifyingIsAlmostFree) {
  SpecController c(6, true);
  // Memory-bound decode: a step costs 10 ms, a draft 0.3 ms.
  auto cost = [](size_t, size_t k) { return 0.010 + 0.0003 * double(k); };
  size_t k = settle(c, 1, 0.8, cost);
  EXPECT_GE(k, 4u);
  EXPECT_NEAR(c.acceptanceRate(), 0.8, 0.05);
}

TEST(RuntimeSpecController, TurnsOffWhenTheBatchIsComputeBound) {
  SpecController c(6, true);
  // Every extra token per sequence costs as much as the step itself.
  auto cost = [](size_t b, size_t k) { return 0.001 * double(b * (k + 1)); };
  EXPECT_EQ(settle(c, 16, 0.6, cost), 0u);
}

TEST(RuntimeSpecController, TurnsOffWhenDraftsAreAlwaysRejected) {
  SpecController c(4, true);
  auto cost = [](size_t, size_t k) { return 0.010 + 0.002 * double(k); };
  EXPECT_EQ(settle(c, 1, 0.0, cost), 0u);
}

TEST(RuntimeSpecController, BucketsByBatchSize) {
  SpecController c(4, true);
  // Cheap at batch 1, compute-bound at batch 32.
  auto cost = [](size_t b, size_t k) {
    return b < 8 ? 0.010 + 0.0005 * double(k) : 0.001 * double(b * (k + 1));
  };
  EXPECT_GE(settle(c, 1, 0.7, cost), 2u);
  EXPECT_EQ(settle(c, 32, 0.7, cost), 0u);
  // The small-batch choice survives the large-batch steps.
  EXPECT_GE(c.chooseK(1), 2u);
}

// Tests the per-position model on bursty acceptance: half the sequences
// keep all six drafts (a loop the proposer caught), half none. One rate
// for every draft (6/7 here) would price deep drafts wrong both ways; per
// position the first is kept half the time and every later one whenever
// the first was, so k drafts give 1 + k / 2 tokens.
TEST(RuntimeSpecController, ModelsAcceptancePerPosition) {
  SpecController c(6, true);
  for (int i = 0; i < 2000; ++i) {
    c.recordCoverage(1, 1);
    c.recordSequence(6, i % 2 ? 6 : 0);
  }
  EXPECT_NEAR(c.positionAcceptance(1), 0.5, 0.02);
  for (size_t j = 2; j <= 6; ++j)
    EXPECT_GT(c.positionAcceptance(j), 0.98) << "position " << j;
  EXPECT_NEAR(c.expectedTokens(1), 1.5, 0.02);
  EXPECT_NEAR(c.expectedTokens(6), 4.0, 0.1);
  EXPECT_DOUBLE_EQ(c.expectedTokens(0), 1.0);
  // A proposer that guesses for a quarter of the sequences: the others
  // decode one token each.
  for (int i = 0; i < 2000; ++i)
    c.recordCoverage(4, 1);
  EXPECT_NEAR(c.expectedTokens(6), 1.0 + 0.25 * 3.0, 0.05);
}

// Tests that positions never tried take the estimate of the one before.
TEST(RuntimeSpecController, UntriedPositionsFollowTheLastTried) {
  SpecController c(6, true);
  for (int i = 0; i < 1000; ++i)
    c.recordSequence(2, i % 4 ? 2 : 1); // draft 2 kept 3 times in 4
  double p2 = c.positionAcceptance(2);
  EXPECT_NEAR(p2, 0.75, 0.03);
  EXPECT_DOUBLE_EQ(c.positionAcceptance(5), p2);
}

TEST(RuntimeSpecController, ReTimesOneDraftForTwoStepsWhileOff) {
  SpecController c(4, true);
  auto cost = [](size_t, size_t k) { return 0.010 + 0.002 * double(k); };
  ASSERT_EQ(settle(c, 1, 0.0, cost, 30), 0u); // the 31st step
  // Step 32 re-times k = 1, and so does step 33: a draft model's first
  // step after steps without speculation catches up and is not timed.
  EXPECT_EQ(c.chooseK(1), 1u);
  EXPECT_EQ(c.chooseK(1), 1u);
  EXPECT_EQ(c.chooseK(1), 0u);
}

TEST(RuntimeSpecController, ComesBackOnOnceSpeculationPaysAgain) {
  // As ServingEngine drives it with a draft model: a step whose drafts
  // followed steps without any is a catch-up, and its time is not
  // recorded. The first 100 steps are compute-bound (every draft costs a
  // step: speculation off is right), then drafts become almost free; the
  // k = 1 timing from the first phase must not keep speculation off.
  SpecController c(6, true);
  std::mt19937 rng(11);
  size_t prevK = 0, k = 0;
  for (int i = 0; i < 600; ++i) {
    k = c.chooseK(1);
    if (k > 0) {
      size_t n = 0;
      while (n < k && double(rng()) < 0.8 * 4294967296.0)
        ++n;
      c.recordCoverage(1, 1);
      c.recordSequence(k, n);
      c.recordAcceptance(k, n, n < k);
    }
    double perDraft = i < 100 ? 0.02 : 0.0003;
    if (!(k > 0 && prevK == 0))
      c.recordTime(1, k, 0.010 + perDraft * double(k));
    prevK = k;
  }
  EXPECT_GE(k, 4u);
}

// Tests that one step stretched by something else on the machine does not
// move the choice: k = 1 wins here by 7 % (1.5 tokens in 14 ms against 1
// in 10 ms), and one of its steps takes six times as long.
TEST(RuntimeSpecController, OneSlowStepDoesNotMoveTheChoice) {
  SpecController c(4, true);
  auto cost = [](size_t, size_t k) { return 0.010 + 0.004 * double(k); };
  ASSERT_EQ(settle(c, 16, 0.5, cost, 100), 1u);
  c.recordCoverage(16, 16);
  for (size_t s = 0; s < 16; ++s)
    c.recordSequence(1, s % 2);
  c.recordAcceptance(16, 8, 8);
  c.recordTime(16, 1, 6 * cost(16, 1));
  EXPECT_NEAR(c.predictedSeconds(16, 1), cost(16, 1), 1e-12);
  EXPECT_EQ(c.chooseK(16), 1u);
  // Three slow steps of the last five are the machine's new speed.
  for (int i = 0; i < 2; ++i)
    c.recordTime(16, 1, 6 * cost(16, 1));
  EXPECT_NEAR(c.predictedSeconds(16, 1), 6 * cost(16, 1), 1e-12);
  EXPECT_NE(c.chooseK(16), 1u);
}

// Tests that speculation is turned on (or off) only for a clear gain: with
// no acceptance measured a draft counts half a token, so k = 1 makes 1.5
// tokens in 19.5 ms against k = 0's one in 10 ms; then k = 0 slows down
// until k = 1 is 1.5 % ahead (within 0.03), then 15 %.
TEST(RuntimeSpecController, TurnsOnOnlyForAClearGain) {
  SpecController c(4, true);
  auto time = [&](size_t k, double seconds, int times = 1) {
    for (int i = 0; i < times; ++i)
      c.recordTime(1, k, seconds);
  };
  for (int i = 0; i < 2; ++i) { // the first timings: k = 0, 1, 0, 1
    ASSERT_EQ(c.chooseK(1), 0u);
    time(0, 0.010);
    ASSERT_EQ(c.chooseK(1), 1u);
    time(1, 0.0195);
  }
  ASSERT_NEAR(c.expectedTokens(1), 1.5, 1e-12);
  EXPECT_EQ(c.chooseK(1), 0u);
  time(0, 0.0132, 3);
  EXPECT_EQ(c.chooseK(1), 0u) << "k = 1 gains 1.5 %";
  time(0, 0.0150, 3);
  EXPECT_EQ(c.chooseK(1), 1u) << "k = 1 gains 15 %";
}

// Tests that while the choice holds, k = 0's neighbour is re-timed less
// and less often: refreshes after 32 steps, then 32, 64 and 128 steps
// apart (the first finds no choice before it to have held; each re-timing
// is two steps while speculation is off).
TEST(RuntimeSpecController, ReTimesLessOftenWhileTheChoiceHolds) {
  SpecController c(4, true);
  auto cost = [](size_t, size_t k) { return 0.010 + 0.010 * double(k); };
  std::vector<int> retimed;
  for (int step = 1; step <= 300; ++step) {
    size_t k = c.chooseK(1);
    if (step > 4 && k != 0)
      retimed.push_back(step);
    c.recordTime(1, k, cost(1, k));
  }
  EXPECT_EQ(retimed, (std::vector<int>{32, 33, 64, 65, 128, 129, 256, 257}));
}

// Tests that when speculating stays on because turning it off gains less
// than the margin, the best k of those that speculate is taken, not the
// one chosen before: k = 1 wins among them once k = 3 has slowed down.
TEST(RuntimeSpecController, KeepsSpeculatingWithItsBestK) {
  SpecController c(3, true);
  for (int i = 0; i < 2000; ++i) // every draft kept half the time
    c.recordSequence(3, i % 2 ? 3 : 0);
  // tokens: k = 1: 1.5, 2: 2.0, 3: 2.5 per step.
  c.recordTime(1, 0, 0.0100); // 100 tokens/s
  c.recordTime(1, 1, 0.0150); // 100
  c.recordTime(1, 2, 0.0300); //  67
  c.recordTime(1, 3, 0.0240); // 104: chosen
  for (int i = 0; i < 2; ++i)
    c.recordTime(1, 0, 0.0100), c.recordTime(1, 1, 0.0150);
  ASSERT_EQ(c.chooseK(1), 3u);
  c.recordTime(1, 3, 0.0255);
  c.recordTime(1, 3, 0.0255);
  c.recordTime(1, 3, 0.0255); // 98: k = 0 (100) gains 2 %, k = 1 ties it
  c.recordTime(1, 1, 0.0149);
  c.recordTime(1, 1, 0.0149);
  c.recordTime(1, 1, 0.0149); // 100.7
  EXPECT_EQ(c.chooseK(1), 1u);
}

// Tests that a timing from before the longest refresh interval is dropped
// when its k is timed again, instead of outvoting the new one.
TEST(RuntimeSpecController, DropsTimingsThatAreTooOld) {
  SpecController c(2, true);
  for (int i = 0; i < 5; ++i)
    c.recordTime(1, 2, 0.010);
  for (unsigned i = 0; i <= SpecController::kMaxRefreshInterval + 1; ++i)
    c.chooseK(1);
  c.recordTime(1, 2, 0.005);
  EXPECT_NEAR(c.predictedSeconds(1, 2), 0.005, 1e-12);
}

TEST(RuntimeSpecController, ExtrapolatesUntimedK) {
  SpecController c(6, true);
  c.recordTime(1, 0, 0.010);
  c.recordTime(1, 1, 0.012);
  EXPECT_NEAR(c.predictedSeconds(1, 4), 0.018, 1e-12);
  EXPECT_LT(c.predictedSeconds(8, 4), 0) << "nothing timed at batch 8";
}

} // namespace
