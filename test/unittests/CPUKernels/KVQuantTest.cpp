//===- KVQuantTest.cpp - fp8 conversions and the KV row formats -----------===//
//
// The scalar definitions in DType.h / KVQuant.h against independent
// oracles (exhaustive fp8 codes, a nearest-value search, the error bounds
// of the int8 / int4 groups), and the vector row paths (KVRowLoad.h)
// against the scalar definitions, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/KVRowLoad.h"

#include <cfloat>
#include <limits>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

constexpr DType kQuantTypes[] = {DType::FP8E4M3, DType::FP8E5M2, DType::I8,
                                 DType::I4};

bool sameFloat(float a, float b) {
  return floatBits(a) == floatBits(b) || (std::isnan(a) && std::isnan(b));
}

struct Fp8 {
  DType type;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
  uint8_t maxCode;
  float max;
};

const Fp8 kFp8[] = {
    {DType::FP8E4M3, floatToFp8E4M3, fp8E4M3ToFloat, 0x7e, 448.0f},
    {DType::FP8E5M2, floatToFp8E5M2, fp8E5M2ToFloat, 0x7b, 57344.0f}};

bool isNanCode(const Fp8 &f, uint8_t c) {
  return f.type == DType::FP8E4M3 ? (c & 0x7f) == 0x7f : (c & 0x7f) > 0x7c;
}

/// The nearest finite code by search over every code (ties to the even
/// code), saturating: independent of the bit manipulation under test.
uint8_t nearestCode(const Fp8 &f, float x) {
  double best = INFINITY;
  uint8_t code = 0;
  for (int c = 0; c < 256; ++c) {
    if (isNanCode(f, uint8_t(c)) || (c & 0x7f) > f.maxCode)
      continue;
    double v = f.decode(uint8_t(c));
    if (v == 0.0 && (c & 0x80)) // -0: only for negative x
      continue;
    double d = std::fabs(double(x) - v);
    if (d < best || (d == best && (c & 1) == 0 && (code & 1) == 1)) {
      best = d;
      code = uint8_t(c);
    }
  }
  if (std::signbit(x) && (code & 0x7f) == 0) // -0 keeps its sign
    code = 0x80;
  return code;
}

// Tests every code: exact decoding (against the formula), and that every
// non-NaN code survives a round trip.
TEST(Fp8, AllCodesRoundTrip) {
  for (const Fp8 &f : kFp8) {
    SCOPED_TRACE(dtypeName(f.type));
    int man = f.type == DType::FP8E4M3 ? 3 : 2;
    int bias = f.type == DType::FP8E4M3 ? 7 : 15;
    for (int c = 0; c < 256; ++c) {
      float v = f.decode(uint8_t(c));
      if (isNanCode(f, uint8_t(c))) {
        EXPECT_TRUE(std::isnan(v)) << c;
        EXPECT_TRUE(isNanCode(f, f.encode(v))) << c;
        continue;
      }
      int e = (c & 0x7f) >> man, m = c & ((1 << man) - 1);
      double want = e == 0 ? std::ldexp(m, 1 - bias - man)
                           : std::ldexp(1.0 + m / double(1 << man), e - bias);
      if (f.type == DType::FP8E5M2 && e == 31)
        want = INFINITY;
      if (c & 0x80)
        want = -want;
      EXPECT_EQ(double(v), want) << c;
      EXPECT_EQ(std::signbit(v), (c & 0x80) != 0) << c;
      EXPECT_EQ(f.encode(v), c) << c;
    }
    EXPECT_EQ(f.decode(f.maxCode), f.max);
  }
  EXPECT_EQ(fp8E4M3ToFloat(0x01), std::ldexp(1.0f, -9)); // smallest subnormal
  EXPECT_EQ(fp8E5M2ToFloat(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8E4M3ToFloat(0x38), 1.0f);
  EXPECT_EQ(fp8E5M2ToFloat(0x3c), 1.0f);
}

// Tests rounding against a search over all codes: random values across the
// range, every midpoint between neighbouring codes and its neighbours.
TEST(Fp8, RoundsToNearestEven) {
  for (const Fp8 &f : kFp8) {
    SCOPED_TRACE(dtypeName(f.type));
    std::vector<float> xs;
    for (int c = 0; c < 0x7f; ++c) {
      if ((c & 0x7f) >= f.maxCode)
        break;
      float a = f.decode(uint8_t(c)), b = f.decode(uint8_t(c + 1));
      float mid = 0.5f * (a + b); // exact: a few bits each
      for (float x : {mid, std::nextafter(mid, 0.0f),
                      std::nextafter(mid, INFINITY), a, b})
        xs.insert(xs.end(), {x, -x});
    }
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> expo(-20.0f, 17.0f);
    for (int i = 0; i < 20000; ++i) {
      float x = std::exp2(expo(rng)) * (rng() % 2 ? 1.0f : -1.0f);
      xs.push_back(x);
    }
    for (float x : xs)
      ASSERT_EQ(f.encode(x), nearestCode(f, x)) << x;
  }
  // Ties by hand: to the even mantissa.
  EXPECT_EQ(floatToFp8E4M3(1.0625f), 0x38);               // 1 | 1.125
  EXPECT_EQ(floatToFp8E4M3(1.1875f), 0x3a);               // 1.125 | 1.25
  EXPECT_EQ(floatToFp8E4M3(std::ldexp(1.0f, -10)), 0x00); // 0 | 2^-9
  EXPECT_EQ(floatToFp8E4M3(std::ldexp(3.0f, -10)), 0x02); // 2^-9 | 2^-8
  EXPECT_EQ(floatToFp8E5M2(1.125f), 0x3c);                // 1 | 1.25
  EXPECT_EQ(floatToFp8E5M2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(floatToFp8E4M3(std::ldexp(15.0f, -10)), 0x08); // to 2^-6
}

// Tests saturation of finite values, inf and NaN, and values far below the
// smallest subnormal.
TEST(Fp8, SaturatesAndKeepsNaN) {
  for (float x : {448.0f, 449.0f, 464.0f, 479.0f, 480.0f, 1e6f, FLT_MAX}) {
    EXPECT_EQ(floatToFp8E4M3(x), 0x7e) << x;
    EXPECT_EQ(floatToFp8E4M3(-x), 0xfe) << x;
  }
  for (float x : {57344.0f, 61440.0f, 65536.0f, 1e9f, FLT_MAX}) {
    EXPECT_EQ(floatToFp8E5M2(x), 0x7b) << x;
    EXPECT_EQ(floatToFp8E5M2(-x), 0xfb) << x;
  }
  EXPECT_TRUE(std::isnan(fp8E4M3ToFloat(floatToFp8E4M3(NAN))));
  EXPECT_TRUE(std::isnan(fp8E4M3ToFloat(floatToFp8E4M3(INFINITY))));
  EXPECT_TRUE(std::isnan(fp8E4M3ToFloat(floatToFp8E4M3(-INFINITY))));
  EXPECT_TRUE(std::isnan(fp8E5M2ToFloat(floatToFp8E5M2(NAN))));
  EXPECT_EQ(fp8E5M2ToFloat(floatToFp8E5M2(INFINITY)), INFINITY);
  EXPECT_EQ(fp8E5M2ToFloat(floatToFp8E5M2(-INFINITY)), -INFINITY);
  for (float x : {1e-30f, 1e-40f, -1e-30f, std::ldexp(1.0f, -11)}) {
    EXPECT_EQ(fp8E4M3ToFloat(floatToFp8E4M3(x)), 0.0f) << x;
    EXPECT_EQ(fp8E5M2ToFloat(floatToFp8E5M2(x * 1e-3f)), 0.0f) << x;
  }
  EXPECT_EQ(dtypeName(DType::FP8E4M3), std::string("fp8_e4m3"));
  EXPECT_EQ(dtypeName(DType::FP8E5M2), std::string("fp8_e5m2"));
  EXPECT_EQ(dtypeName(DType::I8), std::string("int8"));
  EXPECT_EQ(dtypeName(DType::I4), std::string("int4"));
  EXPECT_EQ(dtypeSize(DType::FP8E4M3), 1u);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::I4), 0u);
}

/// A stored row and its params, read back.
struct RoundTrip {
  std::vector<uint8_t> data;
  std::vector<uint16_t> params;
  std::vector<float> back;
};

RoundTrip roundTrip(const std::vector<float> &x, DType t, int64_t group,
                    float scale) {
  int64_t hd = int64_t(x.size());
  RoundTrip r;
  r.data.assign(kvRowBytes(t, hd), 0xEE);
  r.params.assign(size_t(kvRowParams(t, hd, group)), 0xEEEE);
  r.back.assign(x.size(), NAN);
  quantizeKvRow(x.data(), hd, t, group, scale, r.data.data(), r.params.data());
  dequantizeKvRow(r.data.data(), r.params.data(), hd, t, group, scale,
                  r.back.data());
  return r;
}

// Tests the int8 / int4 groups: params rounded outwards (min down, scale
// up), the error within half a step, constant groups, zeros.
TEST(KVQuant, GroupErrorBounds) {
  for (DType t : {DType::I8, DType::I4}) {
    unsigned qmax = kvQuantMax(t);
    for (int64_t group : {2, 8, 32, 64}) {
      for (float mag : {1e-6f, 1e-3f, 1.0f, 37.0f, 3000.0f}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " group " +
                     std::to_string(group) + " mag " + std::to_string(mag));
        auto x = randomVector(size_t(4 * group), uint32_t(group + qmax), -mag,
                              0.5f * mag);
        RoundTrip r = roundTrip(x, t, group, 1.0f);
        for (int64_t g = 0; g < 4; ++g) {
          float scale = f16ToFloat(r.params[size_t(2 * g)]);
          float mn = f16ToFloat(r.params[size_t(2 * g + 1)]);
          float lo = INFINITY, hi = -INFINITY;
          for (int64_t i = g * group; i < (g + 1) * group; ++i) {
            lo = std::min(lo, x[size_t(i)]);
            hi = std::max(hi, x[size_t(i)]);
          }
          EXPECT_LE(mn, lo);
          EXPECT_GE(double(mn) + double(qmax) * scale, double(hi));
          EXPECT_GT(scale, 0.0f);
          for (int64_t i = g * group; i < (g + 1) * group; ++i)
            ASSERT_LE(std::fabs(x[size_t(i)] - r.back[size_t(i)]),
                      scale * 0.5f * (1 + 1e-5f) + 1e-7f * std::fabs(mn))
                << i;
        }
      }
    }
    // A constant exact in f16 (zeros included) is stored with scale 0 and
    // comes back exactly; any other constant within half a (tiny) step.
    for (float c : {0.0f, -0.0f, 1.5f, -2048.0f, 0.1f, -12345.678f}) {
      std::vector<float> x(16, c);
      RoundTrip r = roundTrip(x, t, 16, 1.0f);
      float scale = f16ToFloat(r.params[0]);
      bool exact = f16ToFloat(floatToF16(c)) == c;
      EXPECT_EQ(scale == 0.0f, exact) << c;
      for (float b : r.back)
        EXPECT_LE(std::fabs(b - c), exact ? 0.0f : scale * 0.5f) << c;
      if (exact) {
        for (uint8_t d : r.data)
          EXPECT_EQ(d, 0) << c;
      }
    }
  }
}

// Tests that a NaN or an inf poisons its group (and only it), and what
// values beyond the f16 range do: min and scale clamp to +-65504, so the
// group saturates at the ends of the range they can express.
TEST(KVQuant, NonFiniteAndExtremeGroups) {
  for (DType t : {DType::I8, DType::I4}) {
    SCOPED_TRACE(dtypeName(t));
    unsigned qmax = kvQuantMax(t);
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      auto x = randomVector(32, 5);
      x[20] = bad;
      RoundTrip r = roundTrip(x, t, 16, 1.0f);
      for (int i = 0; i < 16; ++i)
        EXPECT_LE(std::fabs(r.back[size_t(i)] - x[size_t(i)]), 1.01f / qmax);
      for (int i = 16; i < 32; ++i)
        EXPECT_TRUE(std::isnan(r.back[size_t(i)])) << bad << " " << i;
    }
    // Below -65504: the min clamps there and lower values saturate to it.
    std::vector<float> low(16, -1e6f);
    low[3] = -70000.0f;
    low[5] = 0.0f;
    RoundTrip r = roundTrip(low, t, 16, 1.0f);
    EXPECT_EQ(f16ToFloat(r.params[1]), -65504.0f);
    for (size_t i = 0; i < low.size(); ++i) {
      float want = std::max(low[i], -65504.0f);
      EXPECT_TRUE(std::isfinite(r.back[i]));
      EXPECT_LE(std::fabs(r.back[i] - want), f16ToFloat(r.params[0]) * 0.5f)
          << i;
    }
    // A range wider than qmax * 65504: the scale clamps, the top saturates.
    std::vector<float> wide(16, 0.0f);
    wide[0] = -100.0f;
    wide[1] = 3e38f;
    wide[2] = 1e5f;
    r = roundTrip(wide, t, 16, 1.0f);
    float scale = f16ToFloat(r.params[0]), mn = f16ToFloat(r.params[1]);
    float top = mn + float(qmax) * scale;
    EXPECT_EQ(scale, 65504.0f);
    EXPECT_EQ(r.back[1], top);
    for (float b : r.back)
      EXPECT_TRUE(std::isfinite(b));
    EXPECT_LE(std::fabs(r.back[0] - wide[0]), scale * 0.5f);
    if (t == DType::I8) { // 1e5 is inside the int8 range
      EXPECT_LE(std::fabs(r.back[2] - wide[2]), scale * 0.5f);
    }
  }
}

// Tests fp8 rows: x / scale rounded to the nearest code, saturating at
// +-max * scale, NaN and inf kept non-finite.
TEST(KVQuant, Fp8Rows) {
  for (const Fp8 &f : kFp8) {
    SCOPED_TRACE(dtypeName(f.type));
    float scale = 0.0123f;
    auto x = randomVector(64, 9, -3.0f, 3.0f);
    x[0] = 1e6f;
    x[1] = -1e6f;
    x[2] = NAN;
    x[3] = INFINITY;
    x[4] = 0.0f;
    RoundTrip r = roundTrip(x, f.type, 0, scale);
    EXPECT_EQ(r.back[0], f.max * scale);
    EXPECT_EQ(r.back[1], -f.max * scale);
    EXPECT_TRUE(std::isnan(r.back[2]));
    EXPECT_FALSE(std::isfinite(r.back[3]));
    EXPECT_EQ(r.back[4], 0.0f);
    for (size_t i = 5; i < x.size(); ++i) {
      EXPECT_EQ(r.data[i], f.encode(x[i] / scale));
      EXPECT_EQ(r.back[i], f.decode(r.data[i]) * scale);
      float rel = f.type == DType::FP8E4M3 ? 1.0f / 16 : 1.0f / 8;
      EXPECT_LE(std::fabs(r.back[i] - x[i]), std::fabs(x[i]) * rel + 1e-6f);
    }
  }
}

/// Rows whose values stress the formats: random ones of several
/// magnitudes, constant groups, zeros of both signs, NaN and inf, values
/// beyond the fp8 and f16 ranges, f32 subnormals.
std::vector<std::vector<float>> stressRows(int64_t hd) {
  std::vector<std::vector<float>> rows;
  for (float mag : {1e-4f, 1.0f, 300.0f, 1e5f})
    rows.push_back(randomVector(size_t(hd), uint32_t(hd * 7 + mag), -mag, mag));
  rows.push_back(std::vector<float>(size_t(hd), 0.0f));
  rows.push_back(std::vector<float>(size_t(hd), 0.37f));
  auto mixed = randomVector(size_t(hd), 77);
  for (int64_t i = 0; i < hd; i += 7)
    mixed[size_t(i)] = i % 2 ? -0.0f : 0.0f;
  rows.push_back(mixed);
  std::mt19937 rng{uint32_t(hd)};
  std::vector<float> bits(static_cast<size_t>(hd));
  for (float &b : bits) {
    b = bitsToFloat(rng());
    if (std::isnan(b) || std::isinf(b))
      b = 1.0f;
  }
  rows.push_back(bits);
  auto odd = randomVector(size_t(hd), 78);
  odd[size_t(hd / 2)] = NAN;
  odd[size_t(hd - 1)] = -INFINITY;
  odd[0] = 1e-40f;
  odd[1] = 1e30f;
  rows.push_back(odd);
  return rows;
}

// Tests the vector store and load paths against quantizeKvRow and
// dequantizeKvRow, bit for bit, for every type, head size and group.
TEST(KVQuant, RowPathsMatchReference) {
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::FP8E4M3,
                    DType::FP8E5M2, DType::I8, DType::I4})
      // 12 and 20: the vector paths' scalar tails (n % 8, n % 16).
      for (int64_t hd : {8, 12, 20, 24, 32, 64, 80, 128, 256}) {
        std::vector<int64_t> groups = {0};
        if (hasGroupParams(t)) {
          groups.clear();
          for (int64_t g : {2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 80, 128, 256})
            if (hd % g == 0 && (t == DType::I8 || g % 2 == 0))
              groups.push_back(g);
        }
        for (int64_t group : groups)
          for (const auto &x : stressRows(hd)) {
            SCOPED_TRACE(std::string(isaName(isa)) + " " + dtypeName(t) +
                         " hd " + std::to_string(hd) + " group " +
                         std::to_string(group));
            float scale = isFp8(t) ? 0.37f : 1.0f;
            RoundTrip want = roundTrip(x, t, group, scale);
            detail::KvRowFormat f{t, hd, group, scale};
            std::vector<uint8_t> data(want.data.size() + 1, 0xEE);
            std::vector<uint16_t> params(want.params.size() + 1, 0xEEEE);
            detail::storeKvRow(f, x.data(), data.data(), params.data());
            for (size_t i = 0; i < want.data.size(); ++i)
              ASSERT_EQ(data[i], want.data[i]) << i << " " << x[i];
            for (size_t i = 0; i < want.params.size(); ++i)
              ASSERT_EQ(params[i], want.params[i]) << i;
            EXPECT_EQ(data.back(), 0xEE); // nothing past the row
            EXPECT_EQ(params.back(), 0xEEEE);
            std::vector<float> back(x.size() + 1, -7.0f);
            detail::loadKvRow(f, want.data.data(), want.params.data(),
                              back.data());
            for (size_t i = 0; i < x.size(); ++i)
              ASSERT_TRUE(sameFloat(back[i], want.back[i]))
                  << i << " " << back[i] << " " << want.back[i];
            EXPECT_EQ(back.back(), -7.0f);
          }
      }
  }
}

// Tests that loading a chunk of rows at once (loadKvRows, what the tiles
// call; plain floats go through the row conversions) gives each row bit
// for bit as dequantizeKvRow does, rows scattered in memory, on every ISA.
TEST(KVQuant, ChunkLoadsMatchReference) {
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::FP8E4M3,
                    DType::FP8E5M2, DType::I8, DType::I4})
      for (int64_t hd : {16, 80, 128}) {
        SCOPED_TRACE(std::string(isaName(isa)) + " " + dtypeName(t) + " hd " +
                     std::to_string(hd));
        int64_t group = hasGroupParams(t) ? 16 : 0;
        float scale = isFp8(t) ? 0.37f : 1.0f;
        std::vector<std::vector<float>> xs = stressRows(hd);
        std::vector<RoundTrip> stored;
        for (const auto &x : xs)
          stored.push_back(roundTrip(x, t, group, scale));
        // Newest row first, as a block table may scatter them.
        std::vector<const char *> rows;
        std::vector<const uint16_t *> params;
        for (size_t j = stored.size(); j-- > 0;) {
          rows.push_back(reinterpret_cast<const char *>(stored[j].data.data()));
          params.push_back(stored[j].params.data());
        }
        int64_t n = int64_t(rows.size());
        std::vector<float> got(size_t(n * hd) + 1, -7.0f);
        detail::loadKvRows({t, hd, group, scale}, rows.data(),
                           hasGroupParams(t) ? params.data() : nullptr, n,
                           got.data());
        for (int64_t j = 0; j < n; ++j) {
          const RoundTrip &r = stored[size_t(n - 1 - j)];
          std::vector<float> want(static_cast<size_t>(hd));
          dequantizeKvRow(r.data.data(), r.params.data(), hd, t, group, scale,
                          want.data());
          for (int64_t i = 0; i < hd; ++i)
            ASSERT_TRUE(sameFloat(got[size_t(j * hd + i)], want[size_t(i)]))
                << "row " << j << " element " << i;
        }
        EXPECT_EQ(got.back(), -7.0f); // nothing past the chunk
      }
  }
}

// Tests loading every fp8 code and every int8 / int4 code, with scales
// and mins that make the products and sums round.
TEST(KVQuant, LoadAllCodes) {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c)
    codes[size_t(c)] = uint8_t(c);
  std::vector<uint16_t> params;
  for (int g = 0; g < 16; ++g) {
    params.push_back(floatToF16(0.0137f * float(g + 1)));
    params.push_back(floatToF16(-1.7f * float(g) + 0.3f));
  }
  params[6] = params[7] = detail::kKvNanParam;
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    for (DType t : kQuantTypes) {
      int64_t hd = t == DType::I4 ? 512 : 256;
      int64_t group = t == DType::I4 ? 32 : 16;
      float scale = isFp8(t) ? 3.3e-3f : 1.0f;
      std::vector<float> want(static_cast<size_t>(hd)), got(want.size());
      dequantizeKvRow(codes.data(), params.data(), hd, t, group, scale,
                      want.data());
      detail::loadKvRow({t, hd, group, scale}, codes.data(), params.data(),
                        got.data());
      for (int64_t i = 0; i < hd; ++i)
        ASSERT_TRUE(floatBits(got[size_t(i)]) == floatBits(want[size_t(i)]))
            << dtypeName(t) << " " << isaName(isa) << " " << i << " "
            << got[size_t(i)] << " " << want[size_t(i)];
    }
  }
}

// Tests the sizes the runtime allocates by.
TEST(KVQuant, Sizes) {
  KVCacheView c;
  c.numBlocks = 3;
  c.blockSize = 16;
  c.numKvHeads = 4;
  c.headDim = 128;
  c.dtype = DType::I4;
  c.group = 32;
  EXPECT_EQ(c.headRowBytes(), 64u);
  EXPECT_EQ(c.slotBytes(), 256u);
  EXPECT_EQ(c.paramSlotBytes(), 4u * 4 * 4);
  EXPECT_EQ(c.poolBytes(), 48u * 256);
  EXPECT_EQ(c.paramPoolBytes(), 48u * 64);
  EXPECT_EQ(kvBytesPerToken(DType::I4, 4, 128, 32), 2u * (256 + 64));
  EXPECT_EQ(kvBytesPerToken(DType::I8, 4, 128, 128), 2u * (512 + 16));
  EXPECT_EQ(kvBytesPerToken(DType::FP8E4M3, 4, 128, 0), 2u * 512);
  EXPECT_EQ(kvBytesPerToken(DType::BF16, 4, 128, 0), 2u * 1024);
  EXPECT_EQ(kvBytesPerToken(DType::F32, 4, 128, 0), 2u * 2048);
  c.dtype = DType::F16;
  c.group = 0;
  EXPECT_EQ(c.paramPoolBytes(), 0u);
  EXPECT_EQ(c.poolBytes(), 48u * 1024);
}

} // namespace
