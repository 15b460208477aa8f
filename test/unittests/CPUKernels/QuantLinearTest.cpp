//===- QuantLinearTest.cpp - fp8_e4m3 and int4 weights and kernels --------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

/// y = x . W^T + bias with W as the view stores it (dequantized), in
/// double: only the kernel's f32 arithmetic differs.
std::vector<float> reference(const std::vector<float> &x, int64_t m,
                             const WeightView &v, const float *bias) {
  std::vector<float> y(size_t(m * v.n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < v.n; ++r) {
      double s = bias ? bias[r] : 0.0;
      for (int64_t c = 0; c < v.k; ++c)
        s += double(x[size_t(i * v.k + c)]) * weightViewAt(v, r, c);
      y[size_t(i * v.n + r)] = float(s);
    }
  return y;
}

/// Group `c / groupSize`'s (scale, min) of int4 row r.
const uint16_t *int4Params(const WeightView &v, int64_t r, int64_t c) {
  return v.groupParams +
         (r * int4Groups(v.k, v.groupSize) + c / v.groupSize) * 2;
}

/// The largest |x| of the weight group holding column c of x row `row`:
/// the int8-x GEMV rounds each x to a multiple of it / 127.
double groupAbsMax(const float *row, const WeightView &v, int64_t c) {
  int64_t g0 = c / v.groupSize * v.groupSize;
  double a = 0;
  for (int64_t j = g0; j < std::min(g0 + v.groupSize, v.k); ++j)
    a = std::max(a, std::fabs(double(row[j])));
  return a;
}

/// |got - want| within f32 accumulation error of sum |x w| (plus, for
/// int4, of the min term, which the kernels add as min x sum(x)).
/// With `bf16` (the AMX prefill, which rounds x to bf16) another 2^-8 of
/// the sum, the most that rounding can move it; for int4 the AMX prefill
/// carries x and the weights as bf16 hi + lo pairs, which leaves each
/// product within about 2^-15 (two remainders of 2^-16, and lo x lo).
/// With `int8X` (the int4 GEMV on int8 x) each x may move by half of its
/// group's step, |x|max / 127, in the scale x code term (the min term
/// takes the exact sum of x).
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::vector<float> &x, int64_t m, const WeightView &v,
                 const float *bias, const std::string &what, bool bf16 = false,
                 bool int8X = false) {
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < v.n; ++r) {
      double mag = bias ? std::fabs(bias[r]) : 0.0, xRounding = 0;
      for (int64_t c = 0; c < v.k; ++c) {
        double xc = std::fabs(double(x[size_t(i * v.k + c)]));
        mag += xc * std::fabs(weightViewAt(v, r, c));
        if (v.storage == DType::I4) {
          const uint16_t *p = int4Params(v, r, c);
          mag += xc * (15 * std::fabs(f16ToFloat(p[0])) +
                       std::fabs(f16ToFloat(p[1])));
          if (int8X)
            xRounding += std::fabs(weightViewAt(v, r, c) - f16ToFloat(p[1])) *
                         groupAbsMax(x.data() + i * v.k, v, c) / 254;
        }
      }
      size_t at = size_t(i * v.n + r);
      double rounding = !bf16                    ? 0.0
                        : v.storage == DType::I4 ? 1.0 / 16384
                                                 : 1.0 / 256;
      double tol = (2e-6 * double(v.k) + rounding) * mag + xRounding;
      ASSERT_NEAR(got[at], want[at], tol + 1e-30)
          << what << " at (" << i << "," << r << ")";
    }
}

std::string label(const KernelPath &path, int64_t m, int64_t n, int64_t k) {
  return path.name() + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
         " k=" + std::to_string(k);
}

/// Whether linear() rounds x to int8 for `m` rows times `v` on `path`.
/// Whether an int8-x GEMM takes the rows the GEMV does not: AMX-INT8
/// (groups of 128), or the VNNI one (without AMX, and with it for groups
/// of 64).
bool int8XGemm(const KernelPath &path, const WeightView &v) {
  if (path.amx && v.groupSize >= 128 && hostFeatures().amxInt8)
    return true;
  return path.isa == Isa::Avx512 && hostFeatures().avx512vnni &&
         (!path.amx || v.groupSize == 64);
}

bool roundsXToInt8(const KernelPath &path, const WeightView &v, int64_t m) {
  return path.int4X8 && v.int8X &&
         (m <= detail::kInt4X8MaxRows || int8XGemm(path, v));
}

/// Whether that happens in the GEMV (else an int8-x GEMM).
bool int8XGemv(const KernelPath &path, const WeightView &v, int64_t m) {
  return roundsXToInt8(path, v, m) &&
         m <= (int8XGemm(path, v) ? detail::kConvertTileRows
                                  : detail::kInt4X8MaxRows);
}

/// Runs linear() over every ISA and pool and compares with the reference;
/// int4 weights both as given and allowing int8 x (WeightView::int8X).
void checkAllPaths(const WeightView &given, const std::vector<float> &x,
                   int64_t m, const std::vector<float> &bias,
                   const std::string &what) {
  for (bool int8X : {false, true}) {
    if (int8X && given.storage != DType::I4)
      break;
    WeightView v = given;
    v.int8X = int8X;
    PackedWeight pw;
    ASSERT_TRUE(
        PackedWeight::fromView(v, bias.empty() ? nullptr : bias.data(), pw)
            .ok());
    EXPECT_FALSE(pw.usesDnnl());
    const float *b = bias.empty() ? nullptr : bias.data();
    std::vector<float> want = reference(x, m, v, b);
    for (KernelPath path : hostPaths())
      for (ThreadPool *pool : {&serialPool(), &parallelPool()}) {
        PathScope scope(path);
        std::vector<float> y(size_t(m * v.n), NAN);
        ASSERT_TRUE(linear(x.data(), m, pw, y.data(), *pool).ok());
        const bool x8 = roundsXToInt8(path, v, m);
        expectClose(y, want, x, m, v, b,
                    what + (int8X ? " int8X " : " ") + label(path, m, v.n, v.k),
                    path.bf16Prefill(v.storage) && m > 8 && !x8, x8);
      }
  }
}

struct Shape {
  int64_t m, n, k;
};

TEST(Fp8WeightTest, PacksEachRowToItsScale) {
  int64_t n = 6, k = 77;
  std::vector<float> w = randomVector(size_t(n * k), 1);
  for (int64_t c = 0; c < k; ++c)
    w[size_t(5 * k + c)] = 0.0f; // a zero row: scale 0
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::FP8E4M3, p).ok());
  WeightView v = p.view();
  ASSERT_TRUE(checkWeightView(v).ok());
  EXPECT_EQ(p.data.size(), size_t(n * k));
  for (int64_t r = 0; r < n; ++r) {
    float absMax = 0;
    for (int64_t c = 0; c < k; ++c)
      absMax = std::max(absMax, std::fabs(w[size_t(r * k + c)]));
    EXPECT_FLOAT_EQ(v.scales[r], absMax / 448.0f);
    for (int64_t c = 0; c < k; ++c) {
      float want = w[size_t(r * k + c)];
      // 3 mantissa bits: half a step is 2^-4 of the value, or 2^-10 x
      // scale among the subnormals.
      EXPECT_LE(std::fabs(weightViewAt(v, r, c) - want),
                std::max(std::fabs(want) / 16, 0.001f * v.scales[r]))
          << r << "," << c;
    }
  }
  // The row's largest magnitude is exactly +-448 x scale.
  EXPECT_EQ(fp8E4M3ToFloat(p.data[0]) == 448.0f ||
                std::any_of(p.data.begin(), p.data.begin() + k,
                            [](uint8_t c) { return (c & 0x7f) == 0x7e; }),
            true);
  EXPECT_EQ(v.scales[5], 0.0f);
  for (int64_t c = 0; c < k; ++c)
    EXPECT_EQ(weightViewAt(v, 5, c), 0.0f);
}

TEST(Fp8WeightTest, MatchesTheReferenceOnEveryPath) {
  // K around the vectors (16, 32 codes) and lines, N = 1 and off the 4-row
  // tiles, M = 0, 1, the 4-row x tiles with remainders, M past
  // kConvertTileRows (the prefill panels, with a partial panel).
  const Shape shapes[] = {{1, 1, 1},  {1, 1, 17},   {1, 5, 15},   {2, 3, 63},
                          {3, 9, 65}, {4, 8, 64},   {5, 13, 130}, {8, 4, 256},
                          {0, 4, 32}, {9, 37, 200}, {33, 70, 96}};
  for (const Shape &s : shapes) {
    std::vector<float> w = randomVector(size_t(s.n * s.k), uint32_t(s.k + s.n));
    WeightPacking p;
    ASSERT_TRUE(packWeightRows(w.data(), s.n, s.k, DType::FP8E4M3, p).ok());
    checkAllPaths(p.view(), randomVector(size_t(s.m * s.k), 5), s.m,
                  randomVector(size_t(s.n), 9), "fp8");
  }
}

TEST(Fp8WeightTest, BothAvx512BodiesMatchTheReference) {
  // linear() takes the byte-lookup body on a host with AVX512-VBMI, so the
  // f16 route of hosts without it is run directly here too; each over
  // K around the 64-code blocks, every GEMV M, and a row spanning the
  // subnormal codes and the largest one, both signs.
  if (!hostFeatures().avx512)
    GTEST_SKIP() << "no AVX-512";
  std::vector<void (*)(const detail::GemvFp8Args &, int64_t, int64_t)> bodies =
      {detail::gemvFp8Avx512Cvt};
  if (hostFeatures().avx512vbmi)
    bodies.push_back(detail::gemvFp8Avx512Vbmi);
  for (int64_t k : {1, 17, 63, 64, 65, 130, 200})
    for (int64_t m : {1, 2, 3, 4, 5, 8}) {
      const int64_t n = 6;
      std::vector<float> w = randomVector(size_t(n * k), uint32_t(k + m));
      for (int64_t c = 0; c < k; ++c)
        w[size_t(5 * k + c)] = c == 0   ? -448.0f
                               : c == 1 ? 448.0f
                                        : float(int(c % 15) - 7) * 0.001953125f;
      WeightPacking p;
      ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::FP8E4M3, p).ok());
      std::vector<float> x = randomVector(size_t(m * k), uint32_t(3 * k + m));
      std::vector<float> bias = randomVector(size_t(n), uint32_t(k));
      std::vector<float> want = reference(x, m, p.view(), bias.data());
      for (size_t b = 0; b < bodies.size(); ++b) {
        detail::GemvFp8Args a;
        a.x = x.data();
        a.m = m;
        a.k = k;
        a.w = p.data.data();
        a.scales = p.scales.data();
        a.bias = bias.data();
        std::vector<float> y(size_t(m * n), NAN);
        a.y = y.data();
        a.n = n;
        bodies[b](a, 0, n);
        expectClose(y, want, x, m, p.view(), bias.data(),
                    std::string(b ? "vbmi" : "cvt") +
                        " m=" + std::to_string(m) + " k=" + std::to_string(k));
      }
    }
}

TEST(Fp8WeightTest, GemvBatchRowsAreEachRowAlone) {
  // Without AMX, AVX-512 keeps fp8 in the GEMV up to kFp8GemvMaxRows rows
  // (a batched decode or verify step): each row's bits are its own
  // decode's, whatever rows share the step.
  if (!hostFeatures().avx512)
    GTEST_SKIP() << "no AVX-512 here";
  const int64_t n = 37, k = 300;
  std::vector<float> w = randomVector(size_t(n * k), 81);
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::FP8E4M3, p).ok());
  PackedWeight pw;
  std::vector<float> bias = randomVector(size_t(n), 82);
  ASSERT_TRUE(PackedWeight::fromView(p.view(), bias.data(), pw).ok());
  PathScope scope(KernelPath{Isa::Avx512});
  for (int64_t m : {int64_t(9), int64_t(13), detail::kFp8GemvMaxRows}) {
    std::vector<float> x = randomVector(size_t(m * k), uint32_t(83 + m), -2, 2);
    std::vector<float> y(size_t(m * n), NAN);
    ASSERT_TRUE(linear(x.data(), m, pw, y.data(), parallelPool()).ok());
    for (int64_t i = 0; i < m; ++i) {
      std::vector<float> one(size_t(n), NAN);
      ASSERT_TRUE(
          linear(x.data() + i * k, 1, pw, one.data(), serialPool()).ok());
      EXPECT_EQ(std::memcmp(one.data(), y.data() + i * n, 4 * size_t(n)), 0)
          << "m=" << m << " row " << i;
    }
  }
}

TEST(Fp8WeightTest, SubnormalZeroAndExtremeRows) {
  // Row 0 zero, row 1 tiny, row 2 huge, row 3 spanning e4m3's subnormals
  // (values far below the row's max): each row is relative to its scale.
  for (int64_t m : {int64_t(1), int64_t(3), int64_t(20)}) {
    int64_t n = 5, k = 67;
    std::vector<float> w = randomVector(size_t(n * k), 11);
    for (int64_t c = 0; c < k; ++c) {
      w[size_t(0 * k + c)] = 0.0f;
      w[size_t(1 * k + c)] *= 1e-30f;
      w[size_t(2 * k + c)] *= 1e30f;
      w[size_t(3 * k + c)] = c == 0 ? 448.0f : float(c % 8) * 0.001953125f;
    }
    WeightPacking p;
    ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::FP8E4M3, p).ok());
    // Row 3's scale is 1, so its small weights are the exact subnormal
    // codes 1-7 (x 2^-9).
    ASSERT_EQ(p.scales[3], 1.0f);
    for (int64_t c = 1; c < k; ++c)
      ASSERT_EQ(weightViewAt(p.view(), 3, c), w[size_t(3 * k + c)]);
    std::vector<float> x = randomVector(size_t(m * k), 12);
    checkAllPaths(p.view(), x, m, {}, "fp8 extremes");
    PackedWeight pw;
    ASSERT_TRUE(PackedWeight::fromView(p.view(), nullptr, pw).ok());
    for (KernelPath path : hostPaths()) {
      PathScope scope(path);
      std::vector<float> y(size_t(m * n), NAN);
      ASSERT_TRUE(linear(x.data(), m, pw, y.data(), serialPool()).ok());
      for (int64_t i = 0; i < m; ++i) {
        EXPECT_EQ(y[size_t(i * n)], 0.0f);
        EXPECT_NE(y[size_t(i * n + 1)], 0.0f);
        EXPECT_TRUE(std::isfinite(y[size_t(i * n + 2)]));
      }
    }
  }
}

TEST(Int4WeightTest, PacksGroupsWithScaleAndMin) {
  for (int64_t g : kInt4GroupSizes) {
    // A partial last 128-block for g < 128, and a short last group of 16.
    int64_t n = 3, k = 2 * g + 128 + 16;
    int64_t groups = int4Groups(k, g);
    ASSERT_EQ(groups, 2 + 128 / g + 1);
    std::vector<float> w = randomVector(size_t(n * k), uint32_t(g), -2, 3);
    // Group 0 of row 1 constant, of row 2 zero.
    for (int64_t c = 0; c < g; ++c) {
      w[size_t(1 * k + c)] = 0.7f;
      w[size_t(2 * k + c)] = 0.0f;
    }
    WeightPacking p;
    ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::I4, p, g).ok());
    WeightView v = p.view();
    ASSERT_TRUE(checkWeightView(v).ok());
    EXPECT_EQ(v.groupSize, g);
    EXPECT_EQ(p.data.size(), size_t(n * ((k + 127) / 128) * 64));
    EXPECT_EQ(p.groupParams.size(), size_t(n * groups * 2));
    EXPECT_EQ(weightViewBytes(v), p.data.size() + p.groupParams.size() * 2);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t gi = 0; gi < groups; ++gi) {
        const float *grp = w.data() + r * k + gi * g;
        int64_t len = std::min(g, k - gi * g);
        float lo = *std::min_element(grp, grp + len);
        float hi = *std::max_element(grp, grp + len);
        float scale = f16ToFloat(p.groupParams[size_t((r * groups + gi) * 2)]);
        float mn = f16ToFloat(p.groupParams[size_t((r * groups + gi) * 2 + 1)]);
        EXPECT_NEAR(mn, lo, std::fabs(lo) / 1024);
        EXPECT_NEAR(scale, (hi - lo) / 15, (hi - lo) / 15 / 512 + 1e-7f);
        for (int64_t i = 0; i < len; ++i)
          EXPECT_LE(std::fabs(weightViewAt(v, r, gi * g + i) - grp[i]),
                    0.5f * scale + (std::fabs(lo) + std::fabs(hi)) / 1024)
              << "g=" << g << " row " << r << " col " << gi * g + i;
      }
    // The constant and the zero group are exact.
    for (int64_t c = 0; c < g; ++c) {
      EXPECT_EQ(weightViewAt(v, 1, c), f16ToFloat(floatToF16(0.7f)));
      EXPECT_EQ(weightViewAt(v, 2, c), 0.0f);
    }
  }
}

TEST(Int4WeightTest, NibbleLayoutIsTheDocumentedOne) {
  // Weight 16j + l of a block is nibble j of 32-bit word l: codes 0..15
  // written as weight value = code (min 0, scale 1) land there.
  int64_t k = 128;
  std::vector<float> w(static_cast<size_t>(k));
  for (int64_t c = 0; c < k; ++c)
    w[size_t(c)] = float((c * 7 + c / 16) % 16);
  w[0] = 0.0f;
  w[1] = 15.0f; // pin min 0 and max 15
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), 1, k, DType::I4, p, 128).ok());
  ASSERT_EQ(f16ToFloat(p.groupParams[0]), 1.0f);
  ASSERT_EQ(f16ToFloat(p.groupParams[1]), 0.0f);
  for (int64_t c = 0; c < k; ++c) {
    int64_t j = c / 16, l = c % 16;
    uint32_t word;
    std::memcpy(&word, p.data.data() + 4 * l, 4);
    EXPECT_EQ((word >> (4 * j)) & 0xf, uint32_t(w[size_t(c)])) << c;
  }
}

TEST(Int4WeightTest, MatchesTheReferenceOnEveryPath) {
  // K = one group, a partial 128-block (96, 160), several blocks; M = 0,
  // 1, 2-5 (the two-row-by-four tiles and remainders), past
  // kConvertTileRows (panels); N = 1 and off the tiles.
  const Shape shapes[] = {{1, 1, 32},  {1, 5, 128},  {2, 3, 96},   {3, 9, 160},
                          {4, 8, 256}, {5, 13, 384}, {0, 4, 128},  {1, 7, 512},
                          {8, 3, 64},  {9, 37, 192}, {33, 70, 128}};
  for (const Shape &s : shapes)
    for (int64_t g : kInt4GroupSizes) {
      if (s.k % g != 0)
        continue;
      std::vector<float> w =
          randomVector(size_t(s.n * s.k), uint32_t(s.k + s.n + g), -1.5, 1);
      WeightPacking p;
      ASSERT_TRUE(packWeightRows(w.data(), s.n, s.k, DType::I4, p, g).ok());
      checkAllPaths(p.view(), randomVector(size_t(s.m * s.k), 5), s.m,
                    randomVector(size_t(s.n), 9),
                    "int4 g=" + std::to_string(g));
    }
}

// K off every group size and vector width: a short last group, a last
// 16-weight vector cut inside (8 lanes valid and fewer), a last block of
// fewer than 128 weights, at decode, two-row and panel M.
TEST(Int4WeightTest, ShortLastGroupAndVectorTails) {
  for (int64_t k : {int64_t(1), int64_t(7), int64_t(12), int64_t(33),
                    int64_t(100), int64_t(200), int64_t(301)})
    for (int64_t m : {int64_t(1), int64_t(2), int64_t(3), int64_t(9)})
      for (int64_t g : kInt4GroupSizes) {
        const int64_t n = 6;
        std::vector<float> w =
            randomVector(size_t(n * k), uint32_t(k * 7 + g), -1, 2);
        WeightPacking p;
        ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::I4, p, g).ok());
        checkAllPaths(p.view(), randomVector(size_t(m * k), uint32_t(k + m)), m,
                      randomVector(size_t(n), 3),
                      "int4 tails g=" + std::to_string(g));
      }
}

/// What the int8-x int4 GEMV computes, in double: per weight group, x
/// rounded to the codes round(x * (127 / |x|max)) (f32 product, nearest
/// even) of step |x|max / 127, scale x sum(q x code x step), plus min x the
/// exact sum of x. Written from the definition, not from the kernel.
std::vector<float> int8XReference(const std::vector<float> &x, int64_t m,
                                  const WeightView &v, const float *bias) {
  std::vector<float> y(size_t(m * v.n));
  const int64_t groups = int4Groups(v.k, v.groupSize);
  for (int64_t i = 0; i < m; ++i) {
    const float *row = x.data() + i * v.k;
    std::vector<double> codes(static_cast<size_t>(v.k)),
        steps(static_cast<size_t>(groups)), sums(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) {
      float amax = float(groupAbsMax(row, v, g * v.groupSize));
      float inv = amax > 0 ? 127.0f / amax : 0.0f;
      steps[size_t(g)] = amax / 127.0f;
      for (int64_t c = g * v.groupSize;
           c < std::min((g + 1) * v.groupSize, v.k); ++c) {
        float scaled = row[c] * inv;
        codes[size_t(c)] = std::nearbyint(scaled);
        sums[size_t(g)] += row[c];
      }
    }
    for (int64_t r = 0; r < v.n; ++r) {
      double s = bias ? bias[r] : 0.0;
      for (int64_t g = 0; g < groups; ++g) {
        const uint16_t *p = int4Params(v, r, g * v.groupSize);
        const uint8_t *wRow =
            static_cast<const uint8_t *>(v.data) + r * int4RowBytes(v.k);
        double dot = 0;
        for (int64_t c = g * v.groupSize;
             c < std::min((g + 1) * v.groupSize, v.k); ++c)
          dot += int4CodeAt(wRow, c) * codes[size_t(c)];
        s += double(f16ToFloat(p[0])) * steps[size_t(g)] * dot +
             double(f16ToFloat(p[1])) * sums[size_t(g)];
      }
      y[size_t(i * v.n + r)] = float(s);
    }
  }
  return y;
}

// The int8-x GEMV against its own definition, to f32 accumulation error:
// every group size, partial groups and blocks, x rows with a zero group and
// with one large element, every x tile, the AMX-INT8 and VNNI GEMMs, and
// each GEMV row's result bitwise the same whatever rows share its call.
TEST(Int4WeightTest, Int8XMatchesItsDefinition) {
  std::vector<KernelPath> paths;
  for (KernelPath p : hostPaths())
    if (p.int4X8)
      paths.push_back(p);
  if (paths.empty())
    GTEST_SKIP() << "no AVX2 here";
  // M up to kInt4X8MaxRows: eight-row tiles and every remainder; beyond
  // kConvertTileRows the GEMMs: with AMX-INT8 and groups of 64 or 128 two
  // A tiles, one, partial 32-column panels and a last block holding one
  // group of 64 (k = 300); on the VNNI one, every row remainder of its
  // six-row tiles and a last block holding part of its groups.
  const Shape shapes[] = {
      {1, 1, 32},   {1, 9, 128},  {2, 5, 96},    {3, 7, 200},   {4, 6, 384},
      {5, 13, 301}, {7, 4, 1000}, {8, 11, 256},  {13, 3, 160},  {15, 34, 200},
      {22, 5, 128}, {32, 6, 96},  {33, 70, 128}, {45, 37, 300}, {64, 33, 256},
      {17, 9, 200}, {24, 10, 128}};
  for (const Shape &s : shapes)
    for (int64_t g : kInt4GroupSizes) {
      std::vector<float> w =
          randomVector(size_t(s.n * s.k), uint32_t(s.k * 3 + g), -1.5, 1);
      WeightPacking p;
      ASSERT_TRUE(packWeightRows(w.data(), s.n, s.k, DType::I4, p, g).ok());
      WeightView v = p.view();
      v.int8X = true;
      std::vector<float> x =
          randomVector(size_t(s.m * s.k), uint32_t(s.k + g), -2, 2);
      for (int64_t c = 0; c < std::min<int64_t>(s.k, 32); ++c)
        x[size_t(c)] = 0.0f; // a zero group in row 0
      x[size_t((s.m - 1) * s.k + s.k / 2)] = 300.0f;
      std::vector<float> bias = randomVector(size_t(s.n), 4);
      PackedWeight pw;
      ASSERT_TRUE(PackedWeight::fromView(v, bias.data(), pw).ok());
      const std::vector<float> want = int8XReference(x, s.m, v, bias.data());
      for (KernelPath path : paths) {
        if (!roundsXToInt8(path, v, s.m))
          continue;
        PathScope scope(path);
        std::vector<float> y(size_t(s.m * s.n), NAN);
        ASSERT_TRUE(linear(x.data(), s.m, pw, y.data(), parallelPool()).ok());
        std::string what =
            "int4 x8 g=" + std::to_string(g) + " " + label(path, s.m, s.n, s.k);
        expectClose(y, want, x, s.m, v, bias.data(), what);
        // The GEMV's rows; the GEMM's f32 steps are not the GEMV's.
        const int64_t alone = int8XGemv(path, v, s.m) ? s.m : 0;
        for (int64_t i = 0; i < alone; ++i) {
          std::vector<float> one(size_t(s.n), NAN);
          ASSERT_TRUE(
              linear(x.data() + i * s.k, 1, pw, one.data(), serialPool()).ok());
          EXPECT_EQ(
              std::memcmp(one.data(), y.data() + i * s.n, 4 * size_t(s.n)), 0)
              << what << " row " << i;
        }
      }
    }
}

TEST(Int4WeightTest, ConstantZeroAndLargeGroups) {
  int64_t n = 4, k = 256;
  for (int64_t m : {int64_t(1), int64_t(3), int64_t(12)}) {
    std::vector<float> w = randomVector(size_t(n * k), 31);
    for (int64_t c = 0; c < k; ++c) {
      w[size_t(0 * k + c)] = 0.0f;                      // all zero
      w[size_t(1 * k + c)] = c < 128 ? -3.25f : 60000;  // constant groups
      w[size_t(2 * k + c)] = c % 2 ? 60000.0f : -60000; // f16's edge
    }
    WeightPacking p;
    ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::I4, p, 128).ok());
    std::vector<float> x = randomVector(size_t(m * k), 32);
    checkAllPaths(p.view(), x, m, {}, "int4 extremes");
    for (bool int8X : {false, true})
      for (KernelPath path : hostPaths()) {
        // Constant groups have scale 0: int8 x changes nothing there.
        WeightView v = p.view();
        v.int8X = int8X;
        PackedWeight pw;
        ASSERT_TRUE(PackedWeight::fromView(v, nullptr, pw).ok());
        PathScope scope(path);
        std::vector<float> y(size_t(m * n), NAN);
        ASSERT_TRUE(linear(x.data(), m, pw, y.data(), serialPool()).ok());
        for (int64_t i = 0; i < m; ++i) {
          EXPECT_EQ(y[size_t(i * n)], 0.0f);
          double want = 0, mag = 0;
          for (int64_t c = 0; c < k; ++c) {
            double term =
                double(x[size_t(i * k + c)]) * (c < 128 ? -3.25 : 60000.0);
            want += term;
            mag += std::fabs(term);
          }
          // The AMX prefill carries x and the weights as bf16 hi + lo.
          double tol =
              1e-4 * 60000 * k + (path.amx && m > 8 ? mag / 16384 : 0.0);
          EXPECT_NEAR(y[size_t(i * n + 1)], want, tol) << path.name();
        }
      }
  }
}

TEST(Int4WeightTest, RefusesWhatItCannotPack) {
  std::vector<float> w(size_t(2 * 96), 1.0f);
  WeightPacking p;
  Status s = packWeightRows(w.data(), 2, 96, DType::I4, p, 48);
  EXPECT_NE(s.message().find("supported: 32, 64, 128"), std::string::npos)
      << s.message();
  s = packWeightRows(w.data(), 2, 96, DType::FP8E4M3, p, 32);
  EXPECT_NE(s.message().find("int4 weights only"), std::string::npos)
      << s.message();
  w[5] = 1e6f;
  s = packWeightRows(w.data(), 2, 96, DType::I4, p, 32);
  EXPECT_NE(s.message().find("group 0 of row 0"), std::string::npos)
      << s.message();
}

TEST(Int4WeightTest, ViewChecksNameTheBadPart) {
  std::vector<float> w = randomVector(size_t(4 * 128), 4);
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), 4, 128, DType::I4, p, 32).ok());
  WeightView v = p.view();
  WeightView badGroup = v;
  badGroup.groupSize = 48;
  EXPECT_NE(checkWeightView(badGroup).message().find("group size 48"),
            std::string::npos);
  WeightView noParams = v;
  noParams.groupParams = nullptr;
  EXPECT_NE(checkWeightView(noParams).message().find("group parameters"),
            std::string::npos);
  WeightView fp8 = v;
  fp8.storage = DType::FP8E4M3;
  EXPECT_NE(checkWeightView(fp8).message().find("no group parameters"),
            std::string::npos);
}

} // namespace
