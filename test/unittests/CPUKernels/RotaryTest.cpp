//===- RotaryTest.cpp - Rotary position embedding -------------------------===//

#include "TestUtil.h"

#include "codegen/CPU/Reference/Reference.h"
#include "codegen/CPU/Rotary.h"

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

struct RotaryCase {
  int64_t headDim, rotaryDim;
  RotaryStyle style;
  RopeScaling scaling;
  float base;
};

TEST(Rotary, MatchesReference) {
  const RotaryCase cases[] = {
      {64, 64, RotaryStyle::HalfSplit, RopeScaling::None, 10000.0f},
      {64, 64, RotaryStyle::Interleaved, RopeScaling::None, 10000.0f},
      {80, 32, RotaryStyle::HalfSplit, RopeScaling::None, 10000.0f}, // partial
      {64, 16, RotaryStyle::Interleaved, RopeScaling::None, 500000.0f},
      {128, 128, RotaryStyle::HalfSplit, RopeScaling::Linear, 10000.0f},
      {128, 128, RotaryStyle::HalfSplit, RopeScaling::Llama3, 500000.0f},
  };
  std::vector<int32_t> positions = {0, 1, 5, 100, 4095, 131071, 7};
  int64_t t = int64_t(positions.size()), hq = 4, hk = 2;
  for (const RotaryCase &c : cases) {
    RotaryParams p;
    p.headDim = c.headDim;
    p.rotaryDim = c.rotaryDim;
    p.style = c.style;
    p.scaling = c.scaling;
    p.base = c.base;
    p.factor = c.scaling == RopeScaling::Llama3 ? 8.0f : 2.0f;
    auto q = randomVector(size_t(t * hq * c.headDim), 20);
    auto k = randomVector(size_t(t * hk * c.headDim), 21);
    auto qWant = q, kWant = k, qPar = q, kPar = k;
    ASSERT_TRUE(applyRotary(q.data(), hq, k.data(), hk, positions.data(), t, p,
                            serialPool()));
    ASSERT_TRUE(applyRotary(qPar.data(), hq, kPar.data(), hk, positions.data(),
                            t, p, parallelPool()));
    ref::rotary(qWant.data(), t, hq, positions.data(), p);
    ref::rotary(kWant.data(), t, hk, positions.data(), p);
    EXPECT_LE(maxAbsDiff(q, qWant), 2e-6f) << c.headDim << "/" << c.rotaryDim;
    EXPECT_LE(maxAbsDiff(k, kWant), 2e-6f);
    EXPECT_TRUE(bitwiseEqual(q, qPar));
    // The pass-through tail of a partial rotation is untouched.
    auto orig = randomVector(size_t(t * hq * c.headDim), 20);
    for (int64_t i = 0; i < t * hq; ++i)
      for (int64_t d = c.rotaryDim; d < c.headDim; ++d)
        ASSERT_EQ(q[size_t(i * c.headDim + d)],
                  orig[size_t(i * c.headDim + d)]);
  }
}

// Tests the defining property on one known case: position 0 is the identity
// and position 1 rotates pair 0 by exactly one radian.
TEST(Rotary, KnownValues) {
  RotaryParams p;
  p.headDim = p.rotaryDim = 4;
  std::vector<float> x = {1, 0, 0, 0, 1, 0, 0, 0};
  std::vector<int32_t> pos = {0, 1};
  ASSERT_TRUE(applyRotary(x.data(), 1, nullptr, 0, pos.data(), 2, p));
  EXPECT_FLOAT_EQ(x[0], 1.0f);
  EXPECT_FLOAT_EQ(x[2], 0.0f);
  EXPECT_NEAR(x[4], std::cos(1.0f), 1e-7f); // half-split pair (0, 2)
  EXPECT_NEAR(x[6], std::sin(1.0f), 1e-7f);
}

// Tests llama3 scaling's three bands against hand-computed frequencies.
TEST(Rotary, Llama3Bands) {
  RotaryParams p;
  p.headDim = p.rotaryDim = 128;
  p.base = 500000.0f;
  p.scaling = RopeScaling::Llama3;
  p.factor = 8.0f;
  std::vector<float> inv = rotaryInverseFrequencies(p);
  ASSERT_EQ(inv.size(), 64u);
  EXPECT_FLOAT_EQ(inv[0], 1.0f); // short: kept
  float raw63 = float(1.0 / std::pow(500000.0, 126.0 / 128.0));
  EXPECT_FLOAT_EQ(inv[63], raw63 / 8.0f); // long: divided
  // Wavelengths between 2048 and 8192 (i = 29..35) are interpolated.
  float raw32 = float(1.0 / std::pow(500000.0, 64.0 / 128.0));
  EXPECT_GT(inv[32], raw32 / 8.0f);
  EXPECT_LT(inv[32], raw32);
}

TEST(Rotary, RejectsBadParams) {
  RotaryParams p;
  p.headDim = 64;
  p.rotaryDim = 63;
  float x[64] = {};
  int32_t pos = 0;
  EXPECT_FALSE(applyRotary(x, 1, nullptr, 0, &pos, 1, p));
  p.rotaryDim = 128;
  EXPECT_FALSE(applyRotary(x, 1, nullptr, 0, &pos, 1, p));
  p.rotaryDim = 64;
  p.base = 0.0f;
  EXPECT_FALSE(applyRotary(x, 1, nullptr, 0, &pos, 1, p));
  p.base = 10000.0f;
  EXPECT_TRUE(applyRotary(nullptr, 1, nullptr, 0, nullptr, 0, p));
}

} // namespace
