//===- SpecControllerTest.cpp - Choosing k per step -----------------------===//

#include "runtime/SpecDecode/SpecController.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace folio::spec;

namespace {

/// Drives the controller against a synthetic machine: `cost(batch, k)` is
/// a step's time, and every draft is kept with probability `alpha`
/// (expected counts, no noise). Returns the k chosen at the end.
size_t settle(SpecController &c, size_t batch, double alpha,
              const std::function<double(size_t, size_t)> &cost,
              int steps = 200) {
  size_t k = 0;
  for (int i = 0; i < steps; ++i) {
    k = c.chooseK(batch);
    if (k > 0) {
      // Expected kept drafts per sequence under the geometric model.
      double kept = alpha * (1 - std::pow(alpha, double(k))) / (1 - alpha);
      double rejectedRuns = 1 - std::pow(alpha, double(k));
      // Counts over 1000 such steps, so that rounding does not bias them.
      c.recordAcceptance(
          1000 * batch * k, size_t(std::lround(1000.0 * double(batch) * kept)),
          size_t(std::lround(1000.0 * double(batch) * rejectedRuns)));
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

TEST(RuntimeSpecController, ExtrapolatesUntimedK) {
  SpecController c(6, true);
  c.recordTime(1, 0, 0.010);
  c.recordTime(1, 1, 0.012);
  EXPECT_NEAR(c.predictedSeconds(1, 4), 0.018, 1e-12);
  EXPECT_LT(c.predictedSeconds(8, 4), 0) << "nothing timed at batch 8";
}

} // namespace
