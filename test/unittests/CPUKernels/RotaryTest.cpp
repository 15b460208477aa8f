//===- RotaryTest.cpp - Rotary position embedding -------------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Reference/Reference.h"
#include "codegen/CPU/Rotary.h"

#include <algorithm>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

struct RotaryCase {
  int64_t headDim, rotaryDim;
  RotaryStyle style;
  RopeScaling scaling;
  float base;

  RotaryParams params() const {
    RotaryParams p;
    p.headDim = headDim;
    p.rotaryDim = rotaryDim;
    p.style = style;
    p.scaling = scaling;
    p.base = base;
    p.factor = scaling == RopeScaling::Llama3 ? 8.0f : 2.0f;
    return p;
  }
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
    RotaryParams p = c.params();
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

/// [B, H, S, D] -> [B, S, H, D] (or back when `back`), D contiguous.
std::vector<float> swapHeadsAndSeq(const std::vector<float> &x, int64_t b,
                                   int64_t h, int64_t s, int64_t d,
                                   bool back = false) {
  std::vector<float> y(x.size());
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di) {
          size_t bhsd = size_t(((bi * h + hi) * s + si) * d + di);
          size_t bshd = size_t(((bi * s + si) * h + hi) * d + di);
          if (back)
            y[bhsd] = x[bshd];
          else
            y[bshd] = x[bhsd];
        }
  return y;
}

/// The [B, H, S, D] executor layout against the reference on [T, H, D],
/// with angles from the frequencies (shared table, and the per-call path
/// for negative and very large positions) and from a model table.
TEST(Rotary, RowsMatchReferenceInBothLayouts) {
  const RotaryCase cases[] = {
      {64, 64, RotaryStyle::HalfSplit, RopeScaling::None, 10000.0f},
      {64, 64, RotaryStyle::Interleaved, RopeScaling::None, 10000.0f},
      {80, 32, RotaryStyle::HalfSplit, RopeScaling::None, 10000.0f},
      {50, 40, RotaryStyle::Interleaved, RopeScaling::None, 500000.0f},
      {22, 22, RotaryStyle::HalfSplit, RopeScaling::Linear, 10000.0f},
      {128, 128, RotaryStyle::HalfSplit, RopeScaling::Llama3, 500000.0f},
  };
  const std::vector<std::vector<int32_t>> positionSets = {
      {0, 1, 2, 3, 4, 5, 6},           // a prefill from 0
      {9, 3, 100, 4095, 7, 7, 300},    // any order, repeats
      {-3, 0, 70000, 131071, 2, 1, 0}, // beyond the shared table
  };
  int64_t b = 1, h = 3, s = 7;
  for (const RotaryCase &c : cases)
    for (const auto &pos32 : positionSets) {
      RotaryParams p = c.params();
      std::vector<int64_t> pos(pos32.begin(), pos32.end());
      auto x = randomVector(size_t(b * h * s * c.headDim), 30);
      // Reference on [S, H, D].
      auto want = swapHeadsAndSeq(x, b, h, s, c.headDim);
      ref::rotary(want.data(), s, h, pos32.data(), p);
      std::vector<float> y(x.size()), yPar(x.size());
      ASSERT_TRUE(applyRotaryRows(x.data(), y.data(), b, h, s, pos.data(),
                                  nullptr, 0, p, serialPool()));
      ASSERT_TRUE(applyRotaryRows(x.data(), yPar.data(), b, h, s, pos.data(),
                                  nullptr, 0, p, parallelPool()));
      EXPECT_LE(maxAbsDiff(swapHeadsAndSeq(y, b, h, s, c.headDim), want), 2e-6f)
          << c.headDim << "/" << c.rotaryDim << " from " << pos[0];
      EXPECT_TRUE(bitwiseEqual(y, yPar));
      // [T, H, D] with positions [T], in place.
      auto tokens = swapHeadsAndSeq(x, b, h, s, c.headDim);
      ASSERT_TRUE(applyRotaryRows(tokens.data(), tokens.data(), s, h, 1,
                                  pos.data(), nullptr, 0, p, serialPool()));
      EXPECT_TRUE(bitwiseEqual(tokens, swapHeadsAndSeq(y, b, h, s, c.headDim)));
      // rotaryCosSinTable, passed as the model's table, gives the same bits
      // for the positions it holds.
      if (pos32[0] >= 0) {
        int64_t top = *std::max_element(pos.begin(), pos.end()) + 1;
        std::vector<float> table = rotaryCosSinTable(p, top),
                           fromTable(x.size());
        ASSERT_EQ(table.size(), size_t(top * c.rotaryDim));
        ASSERT_TRUE(applyRotaryRows(x.data(), fromTable.data(), b, h, s,
                                    pos.data(), table.data(), top, p,
                                    serialPool()));
        EXPECT_TRUE(bitwiseEqual(fromTable, y));
      }
    }
}

TEST(Rotary, RowsFromAModelTable) {
  RotaryParams p;
  p.headDim = 24;
  p.rotaryDim = 16;
  int64_t numPositions = 10, b = 2, h = 2, s = 3;
  auto table = randomVector(size_t(numPositions * p.rotaryDim), 31);
  auto x = randomVector(size_t(b * h * s * p.headDim), 32);
  std::vector<int64_t> pos = {0, 9, 4, 4, 1, 2};
  for (RotaryStyle style : {RotaryStyle::HalfSplit, RotaryStyle::Interleaved}) {
    p.style = style;
    std::vector<float> y(x.size());
    ASSERT_TRUE(applyRotaryRows(x.data(), y.data(), b, h, s, pos.data(),
                                table.data(), numPositions, p, serialPool()));
    int64_t half = p.rotaryDim / 2;
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hi = 0; hi < h; ++hi)
        for (int64_t si = 0; si < s; ++si) {
          size_t row = size_t(((bi * h + hi) * s + si) * p.headDim);
          const float *cs =
              table.data() + pos[size_t(bi * s + si)] * p.rotaryDim;
          for (int64_t i = 0; i < half; ++i) {
            int64_t lo = style == RotaryStyle::HalfSplit ? i : 2 * i;
            int64_t hi2 =
                style == RotaryStyle::HalfSplit ? i + half : 2 * i + 1;
            float a = x[row + size_t(lo)], c = x[row + size_t(hi2)];
            EXPECT_NEAR(y[row + size_t(lo)], a * cs[i] - c * cs[half + i],
                        1e-6f);
            EXPECT_NEAR(y[row + size_t(hi2)], c * cs[i] + a * cs[half + i],
                        1e-6f);
          }
          for (int64_t i = p.rotaryDim; i < p.headDim; ++i)
            EXPECT_EQ(y[row + size_t(i)], x[row + size_t(i)]);
        }
  }
  std::vector<float> y(x.size());
  pos[3] = 10;
  Status st = applyRotaryRows(x.data(), y.data(), b, h, s, pos.data(),
                              table.data(), numPositions, p, serialPool());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "position 10 is beyond the cos/sin table of 10 "
                          "positions");
  // Nothing to do is fine, even without pointers.
  EXPECT_TRUE(applyRotaryRows(nullptr, nullptr, 0, h, s, nullptr, nullptr, 0, p,
                              serialPool()));
}

/// The AVX-512 row loop against the portable one, on heads whose halves
/// are not multiples of the vector width.
TEST(Rotary, VectorRowsMatchScalarRows) {
  if (!hostFeatures().avx512)
    GTEST_SKIP() << "no AVX-512 on this host";
  for (int64_t d :
       {int64_t(2), int64_t(18), int64_t(64), int64_t(100), int64_t(128)})
    for (RotaryStyle style :
         {RotaryStyle::HalfSplit, RotaryStyle::Interleaved}) {
      RotaryParams p;
      p.headDim = d;
      p.rotaryDim = d % 4 == 0 ? d / 2 : d; // partial and full
      p.style = style;
      std::vector<int64_t> pos = {0, 3, 11, 2000, 5};
      int64_t t = int64_t(pos.size()), h = 3;
      auto x = randomVector(size_t(t * h * d), 33);
      std::vector<float> fast(x.size()), slow(x.size());
      ASSERT_TRUE(applyRotaryRows(x.data(), fast.data(), t, h, 1, pos.data(),
                                  nullptr, 0, p, serialPool()));
      setIsaLimit(Isa::Scalar);
      ASSERT_TRUE(applyRotaryRows(x.data(), slow.data(), t, h, 1, pos.data(),
                                  nullptr, 0, p, serialPool()));
      setIsaLimit(Isa::Avx512);
      EXPECT_LE(maxAbsDiff(fast, slow), 1e-6f) << d;
    }
}

} // namespace
