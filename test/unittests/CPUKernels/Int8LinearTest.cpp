//===- Int8LinearTest.cpp - int8 weight packing and its kernels -----------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Activation.h"
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

/// Whether linear() runs `m` rows of int8 weights with x in 16-bit fixed
/// point (Gemv.h): decode rows everywhere, and every M where no bf16 GEMM
/// takes the rows above them (the GEMV, then the int16 GEMM).
bool int16X(const KernelPath &path, int64_t m) {
  return path.isa == Isa::Scalar || m <= detail::kConvertTileRows ||
         (path.amx && hostFeatures().amxInt8) || !path.bf16Prefill(DType::I8);
}

/// |got - want| <= 2e-6 k sum_c |x_c w_c| + tiny: f32 accumulation only;
/// with `bf16X` (the AMX prefill, which rounds x to bf16) another 2^-8 of
/// the sum, the most that rounding can move it; with `int16X` (the GEMV)
/// sum_c |w_c| x one step of the row's x codes (max |x| / 32767 bounds the
/// step from above: the outlier columns only lower it), the most rounding
/// each x to its code can move it, with room for the step's own rounding.
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::vector<float> &x, int64_t m, const WeightView &v,
                 const std::string &what, bool bf16X = false,
                 bool int16X = false) {
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < m; ++i) {
    double amax = 0;
    for (int64_t c = 0; c < v.k; ++c)
      amax = std::max(amax, std::fabs(double(x[size_t(i * v.k + c)])));
    double step = std::max(amax, 0x1p-100) / 32767;
    for (int64_t r = 0; r < v.n; ++r) {
      double mag = 0, wSum = 0;
      for (int64_t c = 0; c < v.k; ++c) {
        double wc = std::fabs(weightViewAt(v, r, c));
        mag += std::fabs(double(x[size_t(i * v.k + c)])) * wc;
        wSum += wc;
      }
      size_t at = size_t(i * v.n + r);
      double tol = (2e-6 * double(v.k) + (bf16X ? 1.0 / 256 : 0.0)) * mag +
                   (int16X ? wSum * step : 0.0);
      ASSERT_NEAR(got[at], want[at], tol + 1e-30)
          << what << " at (" << i << "," << r << ")";
    }
  }
}

/// Random weights with an outlier column every `every` columns (0: none).
std::vector<float> weights(int64_t n, int64_t k, uint32_t seed,
                           int64_t every = 0, float outlier = 40.0f) {
  std::vector<float> w = randomVector(size_t(n * k), seed);
  if (every > 0)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = every / 2; c < k; c += every)
        w[size_t(r * k + c)] = (r % 2 ? -outlier : outlier) * (1 + r % 3);
  return w;
}

TEST(WeightPackTest, Int8RoundsEachRowToItsScale) {
  int64_t n = 7, k = 100;
  std::vector<float> w = weights(n, k, 1);
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::I8, p).ok());
  WeightView v = p.view();
  EXPECT_EQ(v.numOutliers, 0);
  for (int64_t r = 0; r < n; ++r) {
    float absMax = 0;
    for (int64_t c = 0; c < k; ++c)
      absMax = std::max(absMax, std::fabs(w[size_t(r * k + c)]));
    EXPECT_FLOAT_EQ(v.scales[r], absMax / 127.0f);
    for (int64_t c = 0; c < k; ++c)
      EXPECT_LE(std::fabs(weightViewAt(v, r, c) - w[size_t(r * k + c)]),
                0.5001f * v.scales[r]);
  }
}

TEST(WeightPackTest, OutlierColumnsStayInBf16) {
  // Outliers at columns 32, 96, 160, ...: 4 of 256, k / 64 = 4 allowed.
  int64_t n = 9, k = 256;
  std::vector<float> w = weights(n, k, 2, /*every=*/64);
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::I8, p).ok());
  ASSERT_EQ(p.outlierCols, (std::vector<int32_t>{32, 96, 160, 224}));
  WeightView v = p.view();
  for (int64_t r = 0; r < n; ++r) {
    // The scale ignores the outliers, so the rest keeps its resolution.
    EXPECT_LE(v.scales[r], 1.0f / 127.0f + 1e-7f);
    for (int32_t c : p.outlierCols) {
      EXPECT_EQ(static_cast<const int8_t *>(v.data)[r * k + c], 0);
      EXPECT_EQ(weightViewAt(v, r, c),
                bf16ToFloat(floatToBf16(w[size_t(r * k + c)])));
    }
  }
  // More candidates than k / 64: the most extreme are kept.
  std::vector<float> many = weights(n, k, 3, /*every=*/16);
  for (int64_t r = 0; r < n; ++r)
    many[size_t(r * k + 40)] = 1000.0f;
  ASSERT_TRUE(packWeightRows(many.data(), n, k, DType::I8, p).ok());
  EXPECT_EQ(p.outlierCols.size(), 4u);
  EXPECT_TRUE(std::count(p.outlierCols.begin(), p.outlierCols.end(), 40));
}

TEST(WeightPackTest, CalibratedInputOutliersJoinTheWeightRule) {
  // No weight column stands out; inputs 1 everywhere but column 7 (10x
  // the median, past the 6x rule), column 50 (5x, short of it) and column
  // 99 (40x). The weight rule's column 130 (from `every`) stays.
  int64_t n = 6, k = 256;
  std::vector<float> w = weights(n, k, 4);
  for (int64_t r = 0; r < n; ++r)
    w[size_t(r * k + 130)] = 50.0f;
  std::vector<float> input(size_t(k), 1.0f);
  input[7] = 10.0f;
  input[50] = 5.0f;
  input[99] = 40.0f;
  WeightPacking p;
  ASSERT_TRUE(
      packWeightRows(w.data(), n, k, DType::I8, p, 0, input.data()).ok());
  EXPECT_EQ(p.outlierCols, (std::vector<int32_t>{7, 99, 130}));
  // The input columns are exact in bf16 and out of the scales.
  WeightView v = p.view();
  for (int64_t r = 0; r < n; ++r)
    EXPECT_EQ(weightViewAt(v, r, 99),
              bf16ToFloat(floatToBf16(w[size_t(r * k + 99)])));
  // Without the statistics only the weight rule applies.
  ASSERT_TRUE(packWeightRows(w.data(), n, k, DType::I8, p).ok());
  EXPECT_EQ(p.outlierCols, (std::vector<int32_t>{130}));
  // Over the cap (k / 64 = 4): the columns farthest past their threshold,
  // whichever rule found them.
  for (int64_t c : {20, 21, 22})
    input[size_t(c)] = 12.0f; // 2x past the input threshold
  ASSERT_TRUE(
      packWeightRows(w.data(), n, k, DType::I8, p, 0, input.data()).ok());
  ASSERT_EQ(p.outlierCols.size(), 4u);
  EXPECT_TRUE(std::count(p.outlierCols.begin(), p.outlierCols.end(), 99));
  EXPECT_FALSE(std::count(p.outlierCols.begin(), p.outlierCols.end(), 7));
  // The kernels use them like any outlier column.
  std::vector<float> x = randomVector(size_t(3 * k), 8);
  PackedWeight pw;
  ASSERT_TRUE(PackedWeight::fromView(p.view(), nullptr, pw).ok());
  std::vector<float> y(size_t(3 * n), NAN);
  ASSERT_TRUE(linear(x.data(), 3, pw, y.data(), serialPool()).ok());
  expectClose(y, reference(x, 3, p.view(), nullptr), x, 3, p.view(),
              "calibrated outliers", /*bf16X=*/false, /*int16X=*/true);
}

TEST(WeightPackTest, CalibratedColumnsCutTheErrorOfLargeInputs) {
  // One input feature 50x the others (an LLM.int8-style outlier feature)
  // over ordinary weights: its rounding error dominates the int8 product
  // unless its column is kept in bf16. Expected error ratio about
  // sqrt(255 / (255 + 50^2)) = 0.30 of the uncalibrated one.
  int64_t n = 64, k = 256, m = 16;
  std::vector<float> w = weights(n, k, 31);
  std::vector<float> x = randomVector(size_t(m * k), 32);
  for (int64_t i = 0; i < m; ++i)
    x[size_t(i * k + 77)] *= 50.0f;
  std::vector<float> input(size_t(k), 0.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < k; ++c)
      input[size_t(c)] =
          std::max(input[size_t(c)], std::fabs(x[size_t(i * k + c)]));
  auto squaredError = [&](const float *stats) {
    WeightPacking p;
    EXPECT_TRUE(packWeightRows(w.data(), n, k, DType::I8, p, 0, stats).ok());
    PackedWeight pw;
    EXPECT_TRUE(PackedWeight::fromView(p.view(), nullptr, pw).ok());
    std::vector<float> y(size_t(m * n));
    EXPECT_TRUE(linear(x.data(), m, pw, y.data(), serialPool()).ok());
    double e = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < n; ++r) {
        double exact = 0;
        for (int64_t c = 0; c < k; ++c)
          exact += double(x[size_t(i * k + c)]) * w[size_t(r * k + c)];
        double d = y[size_t(i * n + r)] - exact;
        e += d * d;
      }
    return e;
  };
  double plain = squaredError(nullptr), calibrated = squaredError(input.data());
  EXPECT_LT(std::sqrt(calibrated / plain), 0.5)
      << "plain " << plain << ", calibrated " << calibrated;
}

TEST(WeightPackTest, RefusesBadInputStatistics) {
  std::vector<float> w(64 * 4, 0.5f), input(64, 1.0f);
  WeightPacking p;
  Status s =
      packWeightRows(w.data(), 4, 64, DType::FP8E4M3, p, 0, input.data());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fp8_e4m3 weights have none"), std::string::npos)
      << s.message();
  input[5] = NAN;
  s = packWeightRows(w.data(), 4, 64, DType::I8, p, 0, input.data());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("input abs-max of column 5"), std::string::npos)
      << s.message();
}

TEST(WeightPackTest, RefusesWhatItCannotPack) {
  std::vector<float> w = {1, 2, NAN, 4};
  WeightPacking p;
  Status s = packWeightRows(w.data(), 2, 2, DType::I8, p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("weight (1, 0) is not finite"), std::string::npos)
      << s.message();
  w[2] = 3;
  s = packWeightRows(w.data(), 2, 2, DType::I2, p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("f32, bf16, f16, int8, fp8_e4m3 or int4"),
            std::string::npos);
}

TEST(WeightPackTest, ViewChecksNameTheBadPart) {
  std::vector<float> w = weights(4, 128, 4, /*every=*/64);
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), 4, 128, DType::I8, p).ok());
  WeightView v = p.view();
  ASSERT_TRUE(checkWeightView(v).ok());
  WeightView noScales = v;
  noScales.scales = nullptr;
  EXPECT_NE(checkWeightView(noScales).message().find("scales"),
            std::string::npos);
  std::vector<int32_t> cols = {70, 30};
  WeightView unordered = v;
  unordered.outlierCols = cols.data();
  EXPECT_NE(checkWeightView(unordered).message().find("increasing"),
            std::string::npos);
  WeightView bf16 = v;
  bf16.storage = DType::BF16;
  EXPECT_NE(checkWeightView(bf16).message().find("no scales"),
            std::string::npos);
}

struct Shape {
  int64_t m, n, k;
};

// K around the 16-lane vectors and 64-byte lines (1, 15, 17, 63, 65, 130),
// N = 1 and N off the 4-row tiles, M = 0, 1, the 4-row x tiles with
// remainders, and M far beyond kSmallM (the prefill path; on AMX, 32-row
// blocks with one- and two-tile remainders and N off the 32-column panels).
const Shape kShapes[] = {
    {1, 1, 1},     {1, 1, 17},    {1, 5, 15},   {2, 3, 63},     {3, 9, 65},
    {4, 8, 64},    {5, 13, 130},  {6, 4, 256},  {7, 21, 129},   {0, 4, 32},
    {33, 37, 200}, {70, 9, 1000}, {17, 65, 64}, {24, 100, 300}, {66, 40, 200}};

TEST(Int8LinearTest, MatchesTheReferenceOnEveryPath) {
  for (const Shape &s : kShapes)
    for (int64_t every : {int64_t(0), int64_t(64)}) {
      std::vector<float> w = weights(s.n, s.k, uint32_t(s.k + s.n), every);
      std::vector<float> bias = randomVector(size_t(s.n), 9);
      std::vector<float> x = randomVector(size_t(s.m * s.k), 5);
      PackedWeight pw;
      ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, s.n, s.k,
                                     bias.data(), DType::I8, pw)
                      .ok());
      EXPECT_FALSE(pw.usesDnnl());
      std::vector<float> want = reference(x, s.m, pw.view(), bias.data());
      for (KernelPath path : hostPaths())
        for (ThreadPool *pool : {&serialPool(), &parallelPool()}) {
          PathScope scope(path);
          std::vector<float> y(size_t(s.m * s.n), NAN);
          ASSERT_TRUE(linear(x.data(), s.m, pw, y.data(), *pool).ok());
          expectClose(y, want, x, s.m, pw.view(),
                      path.name() + " m=" + std::to_string(s.m) + " n=" +
                          std::to_string(s.n) + " k=" + std::to_string(s.k) +
                          " outliers=" + std::to_string(every),
                      path.bf16Prefill(DType::I8), int16X(path, s.m));
        }
    }
}

TEST(Int8LinearTest, ZeroAndExtremeRows) {
  // A zero row (scale 0), tiny and huge magnitudes: each row's result is
  // relative to its own scale, so none swamps another. M = 3 takes the
  // GEMV tiles, M = 20 the prefill panels.
  for (int64_t m : {int64_t(3), int64_t(20)}) {
    int64_t n = 5, k = 67;
    std::vector<float> w = weights(n, k, 11);
    for (int64_t c = 0; c < k; ++c) {
      w[size_t(0 * k + c)] = 0.0f;
      w[size_t(1 * k + c)] *= 1e-30f;
      w[size_t(2 * k + c)] *= 1e30f;
    }
    std::vector<float> x = randomVector(size_t(m * k), 12);
    PackedWeight pw;
    ASSERT_TRUE(
        PackedWeight::pack(w.data(), DType::F32, n, k, nullptr, DType::I8, pw)
            .ok());
    EXPECT_EQ(pw.view().scales[0], 0.0f);
    std::vector<float> want = reference(x, m, pw.view(), nullptr);
    for (KernelPath path : hostPaths()) {
      PathScope scope(path);
      std::vector<float> y(size_t(m * n), NAN);
      ASSERT_TRUE(linear(x.data(), m, pw, y.data(), serialPool()).ok());
      expectClose(y, want, x, m, pw.view(), path.name(),
                  path.bf16Prefill(DType::I8), int16X(path, m));
      for (int64_t i = 0; i < m; ++i) {
        EXPECT_EQ(y[size_t(i * n)], 0.0f);
        EXPECT_NE(y[size_t(i * n + 1)], 0.0f);
        EXPECT_TRUE(std::isfinite(y[size_t(i * n + 2)]));
      }
    }
  }
}

TEST(Int8LinearTest, ViewsBorrowAndGatedLinearRuns) {
  int64_t f = 24, k = 80, m = 9;
  std::vector<float> w = weights(2 * f, k, 21, /*every=*/64);
  WeightPacking p;
  ASSERT_TRUE(packWeightRows(w.data(), 2 * f, k, DType::I8, p).ok());
  PackedWeight pw;
  ASSERT_TRUE(
      PackedWeight::fromView(p.view(), nullptr, pw, /*gatedHalves=*/true).ok());
  // Nothing copied: the kernels read the packing's bytes.
  EXPECT_EQ(pw.data(), p.data.data());
  EXPECT_EQ(pw.view().scales, p.scales.data());
  EXPECT_EQ(pw.weightBytes(),
            size_t(2 * f * k + 2 * f * 4 + 1 * 4 + 2 * f * 2));
  std::vector<float> x = randomVector(size_t(m * k), 22);
  std::vector<float> gu = reference(x, m, p.view(), nullptr);
  std::vector<float> h(size_t(m * f), NAN);
  ASSERT_TRUE(
      gatedLinear(x.data(), m, pw, Activation::Silu, h.data(), serialPool())
          .ok());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < f; ++j) {
      float g = gu[size_t(i * 2 * f + j)], u = gu[size_t(i * 2 * f + f + j)];
      float want = g / (1.0f + std::exp(-g)) * u;
      EXPECT_NEAR(h[size_t(i * f + j)], want, 1e-3f * (1 + std::fabs(want)));
    }
}

/// The GEMV's definition (Gemv.h), written out here: each x row's codes
/// round-half-even(x * (32767 / a)), a = max(max |x|, 2^-100), step
/// a / 32767, the integer sum over the codes in 64 bits, then
/// float(sum) * step * scale + bias. No outlier columns.
std::vector<float> integerDefinition(const std::vector<float> &x, int64_t m,
                                     const WeightView &v, const float *bias) {
  std::vector<float> y(size_t(m * v.n));
  const int8_t *q = static_cast<const int8_t *>(v.data);
  for (int64_t i = 0; i < m; ++i) {
    float a = 0x1p-100f;
    for (int64_t c = 0; c < v.k; ++c)
      a = std::max(a, std::fabs(x[size_t(i * v.k + c)]));
    float inv = 32767.0f / a, step = a / 32767.0f;
    std::vector<int64_t> codes(size_t(v.k));
    for (int64_t c = 0; c < v.k; ++c)
      codes[size_t(c)] = std::lrint(x[size_t(i * v.k + c)] * inv);
    for (int64_t r = 0; r < v.n; ++r) {
      int64_t sum = 0;
      for (int64_t c = 0; c < v.k; ++c)
        sum += q[r * v.k + c] * codes[size_t(c)];
      y[size_t(i * v.n + r)] =
          float(sum) * step * v.scales[r] + 0.0f + (bias ? bias[r] : 0.0f);
    }
  }
  return y;
}

/// The int8 kernels' arguments for x[m, k] and `v`, as linear() prepares
/// them: x's outlier columns gathered, and x's 16-bit codes (outlier
/// columns zeroed) with their steps, all owned here; `args.y` is `y`.
struct Int8KernelInputs {
  Int8KernelInputs(const std::vector<float> &x, int64_t m, const WeightView &v,
                   const float *bias, std::vector<float> &y) {
    args = detail::int8WeightArgs(v, m, bias, y.data());
    xOut.resize(size_t(m * v.numOutliers));
    std::vector<float> src = x;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < v.numOutliers; ++j) {
        xOut[size_t(i * v.numOutliers + j)] =
            x[size_t(i * v.k + v.outlierCols[j])];
        src[size_t(i * v.k + v.outlierCols[j])] = 0.0f;
      }
    args.xOut = xOut.data();
    args.kPadded = detail::int8XPaddedLength(v.k);
    xq.resize(size_t(m * args.kPadded));
    steps.resize(static_cast<size_t>(m));
    detail::quantizeXInt16Avx512(src.data(), m, v.k, xq.data(), args.kPadded,
                                 steps.data());
    args.xq = xq.data();
    args.xSteps = steps.data();
  }
  detail::GemvInt8Args args;
  std::vector<float> xOut, steps;
  std::vector<int16_t> xq;
};

/// gemvInt8Avx512Madd, or gemmInt8X16Avx512Madd for more rows than the
/// GEMV takes, over every output: the AVX-512 kernels of hosts without
/// VNNI, which linear() never picks on a host that has it.
std::vector<float> runMaddKernel(const std::vector<float> &x, int64_t m,
                                 const WeightView &v, const float *bias) {
  std::vector<float> y(size_t(m * v.n), NAN);
  Int8KernelInputs in(x, m, v, bias, y);
  (m > detail::kInt8GemvMaxRowsAvx512
       ? detail::gemmInt8X16Avx512Madd
       : detail::gemvInt8Avx512Madd)(in.args, 0, v.n);
  return y;
}

TEST(Int8LinearTest, DecodeRowsAreExactIntegerSums) {
  // K around the 32- and 64-code steps and the int32 chunks (4096 codes on
  // AVX2, 8192 on AVX-512); every M of the GEMV. Every level, pool and
  // batch row gives the definition's bits, alone or in any batch.
  for (int64_t k : {1, 31, 32, 33, 64, 65, 200, 4095, 4097, 8191, 8193, 9000})
    for (int64_t m : {1, 2, 3, 5, 8}) {
      int64_t n = k > 4096 ? 6 : 9;
      std::vector<float> w = weights(n, k, uint32_t(k + 7 * m));
      std::vector<float> bias = randomVector(size_t(n), uint32_t(k));
      std::vector<float> x = randomVector(size_t(m * k), uint32_t(3 * k + m));
      x[0] *= 40.0f; // one large element sets the first row's step
      PackedWeight pw;
      ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k, bias.data(),
                                     DType::I8, pw)
                      .ok());
      ASSERT_EQ(pw.view().numOutliers, 0);
      std::vector<float> want = integerDefinition(x, m, pw.view(), bias.data());
      std::string what = "k=" + std::to_string(k) + " m=" + std::to_string(m);
      for (KernelPath path : hostPaths())
        for (ThreadPool *pool : {&serialPool(), &parallelPool()}) {
          PathScope scope(path);
          std::vector<float> y(size_t(m * n), NAN);
          ASSERT_TRUE(linear(x.data(), m, pw, y.data(), *pool).ok());
          EXPECT_TRUE(bitwiseEqual(y, want)) << path.name() << " " << what;
          // The last row alone.
          std::vector<float> last(x.end() - k, x.end()), y1(size_t(n), NAN);
          ASSERT_TRUE(linear(last.data(), 1, pw, y1.data(), *pool).ok());
          EXPECT_TRUE(
              bitwiseEqual(y1, std::vector<float>(want.end() - n, want.end())))
              << path.name() << " " << what << " alone";
        }
      if (hostFeatures().avx512) {
        EXPECT_TRUE(
            bitwiseEqual(runMaddKernel(x, m, pw.view(), bias.data()), want))
            << "avx512 without vnni " << what;
      }
    }
}

TEST(Int8LinearTest, BatchesAreExactIntegerSums) {
  // Without AMX or the vdpbf16ps GEMM, AVX2 and AVX-512 run the GEMV for
  // a batched decode or a verify step and their int16 GEMMs for more rows
  // (a prefill chunk); with AMX-INT8 the tiles take them: each row is the
  // definition's bits, as alone.
  std::vector<KernelPath> paths;
  for (Isa isa : hostIsas())
    if (isa != Isa::Scalar)
      paths.push_back({isa});
  if (hostFeatures().avx512 && amxSupported() && hostFeatures().amxInt8)
    paths.push_back({Isa::Avx512, true});
  if (paths.empty())
    GTEST_SKIP() << "no AVX2 here";
  for (const KernelPath &path : paths)
    for (int64_t k : {65, 200, 8193})
      for (int64_t m : {int64_t(9), int64_t(14), int64_t(64)}) {
        const int64_t n = 7;
        std::vector<float> w = weights(n, k, uint32_t(k + 5 * m));
        std::vector<float> bias = randomVector(size_t(n), uint32_t(k + 1));
        std::vector<float> x = randomVector(size_t(m * k), uint32_t(k + m));
        PackedWeight pw;
        ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k, bias.data(),
                                       DType::I8, pw)
                        .ok());
        const std::vector<float> want =
            integerDefinition(x, m, pw.view(), bias.data());
        PathScope scope(path);
        std::vector<float> y(size_t(m * n), NAN);
        ASSERT_TRUE(linear(x.data(), m, pw, y.data(), parallelPool()).ok());
        EXPECT_TRUE(bitwiseEqual(y, want))
            << path.name() << " k=" << k << " m=" << m;
      }
}

TEST(Int8LinearTest, LongRowsSumPastInt32) {
  // Every product at its largest, 127 x 32767, over K past one int32
  // chunk: the row sums (K x 4161409, above 2^31 from K = 517) are exact
  // only if each chunk's lanes go into 64 bits in time. The signs alternate
  // in both operands, so every product is positive.
  // M = 30 runs the int16 GEMMs, whose lanes go into 64 bits every 512
  // codes.
  // On AMX-INT8, M = 30 runs the tiles, whose hi and lo sums reach their
  // int32 bounds at K = kInt8AmxMaxCodes.
  for (int64_t k : {int64_t(520), int64_t(8192 + 64), int64_t(20000),
                    detail::kInt8AmxMaxCodes})
    for (int64_t m : {int64_t(2), int64_t(30)}) {
      int64_t n = 5;
      std::vector<float> w(size_t(n * k)), x(size_t(m * k));
      for (int64_t c = 0; c < k; ++c) {
        float sign = c % 2 ? -1.0f : 1.0f;
        for (int64_t r = 0; r < n; ++r)
          w[size_t(r * k + c)] = sign * float(r + 1);
        for (int64_t i = 0; i < m; ++i)
          x[size_t(i * k + c)] = sign * float(i + 2);
      }
      PackedWeight pw;
      ASSERT_TRUE(
          PackedWeight::pack(w.data(), DType::F32, n, k, nullptr, DType::I8, pw)
              .ok());
      std::vector<float> want = integerDefinition(x, m, pw.view(), nullptr);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < n; ++r)
          ASSERT_NEAR(want[size_t(i * n + r)], double(k) * (r + 1) * (i + 2),
                      1e-6 * double(k) * (r + 1) * (i + 2));
      for (KernelPath path : hostPaths()) {
        if (!int16X(path, m))
          continue;
        PathScope scope(path);
        std::vector<float> y(size_t(m * n), NAN);
        ASSERT_TRUE(linear(x.data(), m, pw, y.data(), parallelPool()).ok());
        EXPECT_TRUE(bitwiseEqual(y, want))
            << path.name() << " k=" << k << " m=" << m;
      }
      if (hostFeatures().avx512) {
        EXPECT_TRUE(bitwiseEqual(runMaddKernel(x, m, pw.view(), nullptr), want))
            << "avx512 without vnni k=" << k << " m=" << m;
      }
    }
}

TEST(Int8LinearTest, PrefillRowsAreExactIntegerSums) {
  // The int16 GEMMs (above kInt8GemvMaxRowsAvx512 / Avx2 rows where no
  // bf16 GEMM runs): K around their code pairs, their 16- and 8-pair
  // transposes and their int32 chunks of 512 codes; N on and off their
  // panels of 32 and 16 rows (several panels per thread with the parallel
  // pool); M around their 6-row tiles. Every output is the definition's
  // bits, on both levels, on AVX-512 with VNNI and without, and on the
  // AMX-INT8 tiles.
  std::vector<Isa> isas;
  for (Isa isa : hostIsas())
    if (isa != Isa::Scalar)
      isas.push_back(isa);
  if (isas.empty())
    GTEST_SKIP() << "no AVX2 here";
  std::vector<KernelPath> paths;
  for (Isa isa : isas)
    paths.push_back({isa});
  // And the AMX-INT8 tiles, which take every row count from 5.
  if (hostFeatures().avx512 && amxSupported() && hostFeatures().amxInt8)
    paths.push_back({Isa::Avx512, true});
  for (const KernelPath &path : paths) {
    const Isa isa = path.isa;
    const int64_t rowsAbove =
        (isa == Isa::Avx512 ? detail::kInt8GemvMaxRowsAvx512
                            : detail::kInt8GemvMaxRowsAvx2) +
        1;
    for (int64_t k : {1, 2, 15, 17, 31, 33, 64, 511, 512, 513, 1025, 4097})
      for (int64_t n : {1, 31, 33, 100})
        for (int64_t m :
             {rowsAbove, rowsAbove + 6, int64_t(64), int64_t(131)}) {
          if (k > 600 && m > 64)
            continue; // keeps the double reference cheap
          std::vector<float> w = weights(n, k, uint32_t(k + 3 * n + m));
          std::vector<float> bias = randomVector(size_t(n), uint32_t(k + n));
          std::vector<float> x =
              randomVector(size_t(m * k), uint32_t(2 * k + n + m));
          x[size_t((m / 2) * k)] *= 40.0f; // one row's step set by one element
          PackedWeight pw;
          ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k,
                                         bias.data(), DType::I8, pw)
                          .ok());
          ASSERT_EQ(pw.view().numOutliers, 0);
          const std::vector<float> want =
              integerDefinition(x, m, pw.view(), bias.data());
          const std::string what = path.name() + " k=" + std::to_string(k) +
                                   " n=" + std::to_string(n) +
                                   " m=" + std::to_string(m);
          PathScope scope(path);
          for (ThreadPool *pool : {&serialPool(), &parallelPool()}) {
            std::vector<float> y(size_t(m * n), NAN);
            ASSERT_TRUE(linear(x.data(), m, pw, y.data(), *pool).ok());
            EXPECT_TRUE(bitwiseEqual(y, want)) << what;
          }
          if (isa == Isa::Avx512 && !path.amx) {
            EXPECT_TRUE(
                bitwiseEqual(runMaddKernel(x, m, pw.view(), bias.data()), want))
                << "without vnni " << what;
          }
        }
  }
}

TEST(Int8LinearTest, AmxTilesGiveTheGemvBits) {
  // gemvInt8Amx against the AVX-512 GEMV on the same codes: K on and off
  // its 64-code steps (the last step read through a padded copy), N on and
  // off its groups of 32 weight rows and ranges that start mid-group (the
  // rows copied with padding), M from 2 to past one pass of 16 rows of x,
  // and outlier columns (LongRowsSumPastInt32 has the largest products
  // over the longest K). Every output must be the GEMV's bits.
  if (!hostFeatures().avx512 || !amxSupported() || !hostFeatures().amxInt8)
    GTEST_SKIP() << "no AMX-INT8 here";
  PathScope scope(KernelPath{Isa::Avx512, true});
  ASSERT_TRUE(amxInt8Active());
  auto run = [](const std::vector<float> &x, int64_t m, const WeightView &v,
                const float *bias,
                const std::vector<std::pair<int64_t, int64_t>> &ranges) {
    std::vector<float> want(size_t(m * v.n), NAN), got(want);
    Int8KernelInputs in(x, m, v, bias, want);
    detail::GemvInt8Args &a = in.args;
    detail::gemvInt8Avx512(a, 0, v.n);
    std::vector<uint8_t> storage;
    uint8_t *tiles = detail::alignedScratch(
        storage, size_t(detail::int8AmxXBytes(m, a.kPadded)));
    detail::packXInt8ForAmx(in.xq.data(), m, a.kPadded, tiles);
    a.xAmx = tiles;
    a.y = got.data();
    for (auto [b, e] : ranges)
      detail::gemvInt8Amx(a, b, e);
    return std::make_pair(got, want);
  };
  for (int64_t k : {1, 63, 64, 65, 200, 688, 4097})
    for (int64_t n : {1, 17, 32, 33, 70})
      for (int64_t m : {2, 3, 5, 8, 16, 17, 33}) {
        std::vector<float> w = weights(n, k, uint32_t(k + 3 * n + m), 9);
        std::vector<float> bias = randomVector(size_t(n), uint32_t(k + n));
        std::vector<float> x = randomVector(size_t(m * k), uint32_t(k + m));
        x[size_t((m - 1) * k)] *= 40.0f;
        PackedWeight pw;
        ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k, bias.data(),
                                       DType::I8, pw)
                        .ok());
        const std::string what =
            "k=" + std::to_string(k) + " n=" + std::to_string(n) +
            " m=" + std::to_string(m) +
            " outliers=" + std::to_string(pw.view().numOutliers);
        // All rows at once, and in ranges that split the groups of 32.
        for (const auto &ranges :
             {std::vector<std::pair<int64_t, int64_t>>{{0, n}},
              std::vector<std::pair<int64_t, int64_t>>{
                  {0, n / 3}, {n / 3, n / 2}, {n / 2, n}}}) {
          auto [got, want] = run(x, m, pw.view(), bias.data(), ranges);
          EXPECT_TRUE(bitwiseEqual(got, want)) << what;
        }
      }
  // Through linear(): a weight large enough to be split over the pool
  // (kInt8AmxSerialBytes), the fewest rows the tiles take and one, two
  // and three passes of x, each row the definition's bits.
  const int64_t bigN = 600, bigK = 520;
  ASSERT_GE(bigN * bigK, detail::kInt8AmxSerialBytes);
  std::vector<float> bw = weights(bigN, bigK, 77);
  PackedWeight big;
  ASSERT_TRUE(PackedWeight::pack(bw.data(), DType::F32, bigN, bigK, nullptr,
                                 DType::I8, big)
                  .ok());
  for (int64_t rows :
       {detail::kInt8AmxMinRows, int64_t(16), int64_t(17), int64_t(40)}) {
    std::vector<float> bx = randomVector(size_t(rows * bigK), uint32_t(rows));
    std::vector<float> y(size_t(rows * bigN), NAN);
    ASSERT_TRUE(linear(bx.data(), rows, big, y.data(), parallelPool()).ok());
    EXPECT_TRUE(
        bitwiseEqual(y, integerDefinition(bx, rows, big.view(), nullptr)))
        << "linear() m=" << rows;
  }
}

TEST(Int8LinearTest, NonFiniteAndTinyRowsOfX) {
  // A row holding a NaN or an infinity gives NaN outputs (its codes are
  // undefined); its neighbours keep their own bits. A row of subnormals is
  // resolved to 2^-100 / 32767 and stays finite.
  // M = 30: the int16 GEMMs.
  for (int64_t m : {int64_t(4), int64_t(30)}) {
    int64_t n = 7, k = 70;
    std::vector<float> w = weights(n, k, 41);
    std::vector<float> x = randomVector(size_t(m * k), 42);
    x[size_t(1 * k + 5)] = NAN;
    x[size_t(2 * k + 69)] = -INFINITY;
    for (int64_t c = 0; c < k; ++c)
      x[size_t(3 * k + c)] *= 1e-39f;
    PackedWeight pw;
    ASSERT_TRUE(
        PackedWeight::pack(w.data(), DType::F32, n, k, nullptr, DType::I8, pw)
            .ok());
    std::vector<float> alone(size_t(n), NAN);
    std::vector<float> row0(x.begin(), x.begin() + k);
    std::vector<float> want = reference(x, m, pw.view(), nullptr);
    for (KernelPath path : hostPaths()) {
      if (!int16X(path, m))
        continue; // the bf16 GEMMs' rows are not the GEMV's
      PathScope scope(path);
      std::vector<float> y(size_t(m * n), NAN);
      ASSERT_TRUE(linear(x.data(), m, pw, y.data(), serialPool()).ok());
      ASSERT_TRUE(linear(row0.data(), 1, pw, alone.data(), serialPool()).ok());
      for (int64_t r = 0; r < n; ++r) {
        EXPECT_EQ(y[size_t(r)], alone[size_t(r)]) << path.name();
        EXPECT_TRUE(std::isnan(y[size_t(n + r)])) << path.name();
        EXPECT_TRUE(std::isnan(y[size_t(2 * n + r)])) << path.name();
        EXPECT_TRUE(std::isfinite(y[size_t(3 * n + r)])) << path.name();
        EXPECT_NEAR(y[size_t(3 * n + r)], want[size_t(3 * n + r)], 1e-36);
      }
    }
  }
}

TEST(Int8LinearTest, OutlierColumnsDoNotSetTheStep) {
  // Calibrated input outliers (ordinary weights, x 1e4 in three columns),
  // kept in bf16 with the exact x: they must not coarsen the other
  // columns' codes. With them in the step (1e4 / 32767) each output would
  // move by up to ~0.15 sum |w|, about 20 here; the bound below, from the
  // other columns' step, is about 0.004.
  int64_t n = 8, k = 256, m = 2;
  std::vector<float> w = weights(n, k, 51);
  std::vector<float> x = randomVector(size_t(m * k), 52);
  std::vector<float> input(size_t(k), 1.0f);
  for (int64_t c : {10, 100, 200}) {
    input[size_t(c)] = 1e4f;
    for (int64_t i = 0; i < m; ++i)
      x[size_t(i * k + c)] = i ? -1e4f : 1e4f;
  }
  WeightPacking p;
  ASSERT_TRUE(
      packWeightRows(w.data(), n, k, DType::I8, p, 0, input.data()).ok());
  ASSERT_EQ(p.outlierCols, (std::vector<int32_t>{10, 100, 200}));
  PackedWeight pw;
  ASSERT_TRUE(PackedWeight::fromView(p.view(), nullptr, pw).ok());
  const WeightView &v = pw.view();
  std::vector<float> want = reference(x, m, v, nullptr);
  for (KernelPath path : hostPaths()) {
    PathScope scope(path);
    std::vector<float> y(size_t(m * n), NAN);
    ASSERT_TRUE(linear(x.data(), m, pw, y.data(), serialPool()).ok());
    for (int64_t i = 0; i < m; ++i) {
      double amax = 0;
      for (int64_t c = 0; c < k; ++c)
        if (input[size_t(c)] == 1.0f)
          amax = std::max(amax, std::fabs(double(x[size_t(i * k + c)])));
      for (int64_t r = 0; r < n; ++r) {
        // f32 accumulation over each part, and x's rounding.
        double mag = 0, magOut = 0, wSum = 0;
        for (int64_t c = 0; c < k; ++c) {
          double wc = std::fabs(weightViewAt(v, r, c));
          double xw = std::fabs(double(x[size_t(i * k + c)])) * wc;
          (input[size_t(c)] == 1.0f ? mag : magOut) += xw;
          wSum += input[size_t(c)] == 1.0f ? wc : 0.0;
        }
        size_t at = size_t(i * n + r);
        EXPECT_NEAR(y[at], want[at],
                    2e-6 * double(k) * mag + 1e-6 * magOut +
                        wSum * amax / 32767)
            << path.name() << " at (" << i << "," << r << ")";
      }
    }
  }
}

} // namespace

namespace {

TEST(PackedViewTest, F16AndBf16ViewsMatchTheReference) {
  // f16 weights exist only packed by the compiler (fromView): the GEMV
  // tiles take every M, as for int8.
  for (DType t : {DType::F16, DType::BF16, DType::F32})
    for (const Shape &s : kShapes) {
      std::vector<float> w = weights(s.n, s.k, uint32_t(s.k * 3 + s.n));
      std::vector<float> x = randomVector(size_t(s.m * s.k), 6);
      WeightPacking p;
      ASSERT_TRUE(packWeightRows(w.data(), s.n, s.k, t, p).ok());
      PackedWeight pw;
      ASSERT_TRUE(PackedWeight::fromView(p.view(), nullptr, pw).ok());
      EXPECT_EQ(pw.data(), p.data.data());
      std::vector<float> want = reference(x, s.m, p.view(), nullptr);
      for (Isa isa : hostIsas()) {
        IsaScope scope(isa);
        std::vector<float> y(size_t(s.m * s.n), NAN);
        ASSERT_TRUE(
            linearGemv(x.data(), s.m, pw, y.data(), parallelPool()).ok());
        std::string what = std::string(dtypeName(t)) + " " + isaName(isa) +
                           " m=" + std::to_string(s.m) +
                           " k=" + std::to_string(s.k);
        expectClose(y, want, x, s.m, p.view(), what);
        // linear(): above kSmallM, f16 (never oneDNN) and, on AVX2, bf16 run
        // the widened-panel GEMM, in f32 like the GEMV.
        if (t == DType::F16 || (t == DType::BF16 && isa == Isa::Avx2)) {
          std::vector<float> z(y.size(), NAN);
          ASSERT_TRUE(linear(x.data(), s.m, pw, z.data(), serialPool()).ok());
          expectClose(z, want, x, s.m, p.view(), what + " linear()");
        }
      }
    }
}

} // namespace
