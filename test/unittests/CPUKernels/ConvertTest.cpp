//===- ConvertTest.cpp - f32 <-> bf16/f16 conversions ---------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Convert.h"

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

uint16_t bitsOf(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

/// Random bit patterns plus the values where rounding is delicate.
std::vector<float> trickyFloats() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          1e9f,
                          -1e9f,
                          6.1035156e-05f,
                          5.9604645e-08f,
                          2.9802322e-08f,
                          2.98023259e-08f,
                          1e-30f,
                          INFINITY,
                          -INFINITY,
                          bitsToFloat(0x3f808000u), // bf16 tie, even below
                          bitsToFloat(0x3f818000u), // bf16 tie, odd below
                          bitsToFloat(0x7f7fffffu)};
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    float f = bitsToFloat(rng());
    if (!std::isnan(f))
      v.push_back(f);
  }
  return v;
}

// Tests f32 -> f16 rounding against the compiler's own _Float16 conversion.
TEST(Convert, F16MatchesCompilerConversion) {
  for (float f : trickyFloats())
    ASSERT_EQ(floatToF16(f), bitsOf(static_cast<_Float16>(f))) << f;
}

// Tests that every f16 value widens exactly and survives a round trip.
TEST(Convert, F16RoundTripsAllValues) {
  for (uint32_t h = 0; h < 65536; ++h) {
    _Float16 ref;
    uint16_t hb = uint16_t(h);
    std::memcpy(&ref, &hb, 2);
    float f = f16ToFloat(hb);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(ref)));
      continue;
    }
    ASSERT_EQ(floatBits(f), floatBits(float(ref))) << h;
    ASSERT_EQ(floatToF16(f), hb) << h;
  }
}

// Tests bf16 rounding to nearest even, and NaN staying NaN.
TEST(Convert, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000u)), 0x3f80); // tie -> even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000u)), 0x3f82); // tie -> even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808001u)), 0x3f81);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x7f7fffffu)), 0x7f80); // max -> inf
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(bitsToFloat(0x7f800001u)))));
  for (float f : trickyFloats()) {
    float r = bf16ToFloat(floatToBf16(f));
    if (std::isinf(f) || std::fabs(f) > 3e38f || std::fabs(f) < 1.2e-38f)
      continue;
    ASSERT_LE(std::fabs(r - f), std::fabs(f) * (1.0f / 256.0f)) << f;
  }
}

// Tests that the row conversions (vector paths included) are bit-exact with
// the scalar definitions, tails included.
TEST(Convert, RowPathsMatchScalar) {
  std::vector<float> src = trickyFloats();
  src.resize(100003);
  src.push_back(NAN);
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    for (DType t : {DType::BF16, DType::F16}) {
      std::vector<uint16_t> row(src.size());
      detail::storeRow(src.data(), row.data(), t, int64_t(src.size()));
      for (size_t i = 0; i < src.size(); ++i) {
        uint16_t want =
            t == DType::BF16 ? floatToBf16(src[i]) : floatToF16(src[i]);
        ASSERT_EQ(row[i], want)
            << dtypeName(t) << " " << isaName(isa) << " " << src[i];
      }
      std::vector<float> back(src.size());
      detail::loadRow(row.data(), t, back.data(), int64_t(src.size()));
      for (size_t i = 0; i < src.size(); ++i) {
        float want = loadAsFloat(row.data(), t, i);
        ASSERT_TRUE(floatBits(back[i]) == floatBits(want) ||
                    (std::isnan(back[i]) && std::isnan(want)))
            << i;
      }
    }
  }
}

// Tests that the plain-float row conversions stop with a message when
// handed a quantized type, in release builds too (they used to write
// nothing or read NaNs once asserts were compiled out).
TEST(ConvertDeathTest, RowConversionsRefuseQuantizedTypes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  alignas(64) float f[16] = {};
  alignas(64) uint8_t b[64] = {};
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    SCOPED_TRACE(isaName(isa));
    EXPECT_DEATH(detail::loadRow(b, DType::I8, f, 16),
                 "loadRow takes f32, bf16 and f16 only, got int8");
    EXPECT_DEATH(detail::storeRow(f, b, DType::FP8E4M3, 16),
                 "storeRow takes f32, bf16 and f16 only, got fp8_e4m3");
    EXPECT_DEATH(detail::loadRow(b, DType::I4, f, 16),
                 "loadRow takes f32, bf16 and f16 only, got int4");
  }
  if (hostFeatures().avx512) {
    EXPECT_DEATH(detail::loadRowAvx512(b, DType::FP8E5M2, f, 16),
                 "loadRowAvx512 takes bf16 and f16 only, got fp8_e5m2");
    EXPECT_DEATH(detail::storeRowAvx512(f, b, DType::F32, 16),
                 "storeRowAvx512 takes bf16 and f16 only, got f32");
  }
}

} // namespace
