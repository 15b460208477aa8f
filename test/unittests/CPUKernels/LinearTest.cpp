//===- LinearTest.cpp - PackedWeight, GEMV and the oneDNN path ------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/Reference/Reference.h"

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

struct Shape {
  int64_t m, n, k;
};

/// Reference with the stored (rounded) weights, so only the kernel's own
/// arithmetic differs.
std::vector<float> expected(const std::vector<float> &x, const Shape &s,
                            const PackedWeight &w) {
  std::vector<float> y(size_t(s.m * s.n));
  ref::linear(x.data(), s.m, w.data(), w.storage(), w.bias(), s.n, s.k,
              y.data());
  return y;
}

/// |y - ref| <= tol * sum_k |x_k w_k| + 1e-6: a bound on rounding that holds
/// whatever the data, so the test cannot flake and still catches a wrong
/// element (an error is of the order of the sum itself).
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 const std::vector<float> &x, const PackedWeight &w,
                 const Shape &s, float tol, const char *what) {
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double mag = 0;
      for (int64_t l = 0; l < s.k; ++l)
        mag +=
            std::fabs(double(x[size_t(i * s.k + l)]) *
                      loadAsFloat(w.data(), w.storage(), size_t(j * s.k + l)));
      size_t at = size_t(i * s.n + j);
      ASSERT_NEAR(got[at], want[at], tol * mag + 1e-6)
          << what << " m=" << s.m << " n=" << s.n << " k=" << s.k << " at ("
          << i << "," << j << ")";
    }
}

/// The relative bound for linear()'s dispatch: with bf16 weights oneDNN
/// (M > kSmallM) also rounds x to bf16, so each product is off by at most
/// 2^-8; otherwise only f32 accumulation over k terms.
float dispatchTolerance(int64_t m, int64_t k, const PackedWeight &pw) {
  // On AVX2 bf16 rows beyond kSmallM take the widened-panel GEMM (f32).
  bool dnnlPath = m > kSmallM && pw.usesDnnl() &&
                  !(activeIsa() == Isa::Avx2 && pw.storage() == DType::BF16);
  return pw.storage() == DType::BF16 && dnnlPath ? 1.0f / 256.0f
                                                 : 1e-6f * float(k);
}

// K around the GEMV's 32-element bf16 blocks (17, 31, 33, 47, 63, 2049)
// and N not a multiple of its 4-row tiles; M = 1..4 (GEMV tiles of 4 rows
// plus a remainder), M = 5..8 (the wide tile, two weight rows at a time,
// with N odd for the one-row remainder), 9, 12 and 17 (wide tiles of 8
// plus a remainder), and M beyond kSmallM up to several oneDNN buckets.
const Shape kShapes[] = {
    {1, 1, 1},    {1, 37, 100}, {2, 64, 768}, {3, 33, 17},   {4, 130, 64},
    {5, 40, 31},  {1, 7, 47},   {2, 9, 2049}, {3, 6, 63},    {4, 5, 33},
    {6, 33, 100}, {7, 64, 256}, {8, 35, 47},  {7, 5, 2049},  {8, 1, 17},
    {9, 70, 200}, {12, 13, 33}, {17, 20, 64}, {64, 96, 256}, {200, 21, 48}};

// Tests the GEMV kernel for every M (it is also the no-oneDNN fallback),
// f32 and bf16 weights, with and without bias, on both ISAs and pool sizes.
TEST(Linear, GemvMatchesReference) {
  for (Isa isa : hostIsas())
    for (DType storage : {DType::F32, DType::BF16})
      for (const Shape &s : kShapes) {
        IsaScope scope(isa);
        auto w = randomVector(size_t(s.n * s.k), 40);
        auto bias = randomVector(size_t(s.n), 41);
        auto x = randomVector(size_t(s.m * s.k), 42, -2, 2);
        PackedWeight pw;
        ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, s.n, s.k,
                                       bias.data(), storage, pw));
        std::vector<float> one(size_t(s.m * s.n)), four(one.size());
        ASSERT_TRUE(linearGemv(x.data(), s.m, pw, one.data(), serialPool()));
        ASSERT_TRUE(linearGemv(x.data(), s.m, pw, four.data(), parallelPool()));
        EXPECT_TRUE(bitwiseEqual(one, four));
        // f32 accumulation over k terms.
        expectClose(one, expected(x, s, pw), x, pw, s, 1e-6f * float(s.k),
                    isaName(isa));
      }
}

// Tests that each row of an M-row GEMV is bitwise what a one-row GEMV of
// that row gives, for every tile shape: a speculative verify step runs k + 1
// rows where plain decoding runs one, and greedy output stays the target's
// own only if a row's logits do not depend on the rows next to it.
TEST(Linear, GemvRowsDoNotDependOnM) {
  for (Isa isa : hostIsas())
    for (DType storage : {DType::F32, DType::BF16})
      for (int64_t m : {2, 3, 4, 5, 6, 7, 8, 9, 12, 16}) {
        IsaScope scope(isa);
        const int64_t n = 19, k = 300;
        auto w = randomVector(size_t(n * k), 46);
        auto bias = randomVector(size_t(n), 47);
        auto x = randomVector(size_t(m * k), 48, -2, 2);
        PackedWeight pw;
        ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k, bias.data(),
                                       storage, pw));
        std::vector<float> all(size_t(m * n)), one(static_cast<size_t>(n));
        ASSERT_TRUE(linearGemv(x.data(), m, pw, all.data(), parallelPool()));
        for (int64_t r = 0; r < m; ++r) {
          ASSERT_TRUE(
              linearGemv(x.data() + r * k, 1, pw, one.data(), parallelPool()));
          std::vector<float> row(all.begin() + r * n,
                                 all.begin() + (r + 1) * n);
          EXPECT_TRUE(bitwiseEqual(row, one))
              << isaName(isa) << " m=" << m << " row " << r;
        }
      }
}

// Tests the vector kernels' f16 weights (which PackedWeight does not
// store, but WeightPack's packings do) at every tile shape against the
// portable kernel, and each row against a one-row call bitwise.
TEST(Linear, GemvF16TilesMatchScalar) {
  using Kernel = void (*)(const detail::GemvArgs &, int64_t, int64_t);
  std::vector<std::pair<const char *, Kernel>> kernels;
  if (hostFeatures().avx2)
    kernels.push_back({"avx2", detail::gemvAvx2});
  if (hostFeatures().avx512)
    kernels.push_back({"avx512", detail::gemvAvx512});
  if (kernels.empty())
    GTEST_SKIP() << "no AVX2 or AVX-512 on this host";
  for (auto [name, kernel] : kernels)
    for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 11})
      for (int64_t k : {17, 64, 300}) {
        const int64_t n = 9;
        auto wf = randomVector(size_t(n * k), 49);
        std::vector<uint16_t> w(wf.size());
        for (size_t i = 0; i < wf.size(); ++i)
          w[i] = floatToF16(wf[i]);
        auto x = randomVector(size_t(m * k), 50, -2, 2);
        auto bias = randomVector(size_t(n), 51);
        detail::GemvArgs a;
        a.x = x.data();
        a.m = m;
        a.k = k;
        a.w = w.data();
        a.f16 = true;
        a.bias = bias.data();
        a.n = n;
        std::vector<float> got(size_t(m * n)), want(got.size()),
            one(static_cast<size_t>(n));
        a.y = got.data();
        kernel(a, 0, n);
        a.y = want.data();
        detail::gemvScalar(a, 0, n);
        for (size_t i = 0; i < got.size(); ++i) {
          double mag = 0;
          int64_t row = int64_t(i) / n, col = int64_t(i) % n;
          for (int64_t l = 0; l < k; ++l)
            mag += std::fabs(double(x[size_t(row * k + l)]) *
                             f16ToFloat(w[size_t(col * k + l)]));
          ASSERT_NEAR(got[i], want[i], 1e-6 * double(k) * mag + 1e-6)
              << name << " m=" << m << " k=" << k << " at " << i;
        }
        for (int64_t r = 0; r < m; ++r) {
          detail::GemvArgs b = a;
          b.x = x.data() + r * k;
          b.m = 1;
          b.y = one.data();
          kernel(b, 0, n);
          std::vector<float> row(got.begin() + r * n,
                                 got.begin() + (r + 1) * n);
          EXPECT_TRUE(bitwiseEqual(row, one))
              << name << " m=" << m << " row " << r;
        }
      }
}

// f16 weights (an f16 export's default) through linear() on every path:
// the GEMV up to kSmallM rows, then the AMX GEMM (weights and x as bf16
// hi + lo, within about 2^-15 of their products) or the GEMV tiles.
TEST(Linear, F16WeightsMatchTheReferenceOnEveryPath) {
  const Shape shapes[] = {{1, 9, 17},   {8, 33, 300},  {9, 9, 17},
                          {17, 33, 64}, {40, 70, 300}, {70, 5, 1000}};
  for (const Shape &s : shapes) {
    const std::vector<float> w =
        randomVector(size_t(s.n * s.k), uint32_t(s.k + s.n));
    WeightPacking p;
    ASSERT_TRUE(packWeightRows(w.data(), s.n, s.k, DType::F16, p).ok());
    PackedWeight pw;
    const std::vector<float> bias = randomVector(size_t(s.n), uint32_t(s.n));
    ASSERT_TRUE(PackedWeight::fromView(p.view(), bias.data(), pw).ok());
    const std::vector<float> x =
        randomVector(size_t(s.m * s.k), uint32_t(s.m + s.k), -2, 2);
    const std::vector<float> want = expected(x, s, pw);
    for (KernelPath path : hostPaths()) {
      PathScope scope(path);
      std::vector<float> y(size_t(s.m * s.n), NAN);
      ASSERT_TRUE(linear(x.data(), s.m, pw, y.data(), parallelPool()).ok());
      const float tol = (path.amx && s.m > kSmallM ? 1.0f / 16384 : 0.0f) +
                        1e-6f * float(s.k);
      expectClose(y, want, x, pw, s, tol, path.name().c_str());
    }
  }
}

// Tests linear()'s dispatch, including oneDNN for M > kSmallM. With bf16
// weights oneDNN also rounds x to bf16: each product is then off by at most
// 2^-8 relative, which is the stated tolerance.
TEST(Linear, DispatchMatchesReference) {
  for (Isa isa : hostIsas())
    for (DType storage : {DType::F32, DType::BF16})
      for (const Shape &s : kShapes)
        for (bool withBias : {false, true}) {
          IsaScope scope(isa);
          auto w = randomVector(size_t(s.n * s.k), 43);
          auto bias = randomVector(size_t(s.n), 44);
          auto x = randomVector(size_t(s.m * s.k), 45, -2, 2);
          PackedWeight pw;
          ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, s.n, s.k,
                                         withBias ? bias.data() : nullptr,
                                         storage, pw));
          std::vector<float> y(size_t(s.m * s.n));
          ASSERT_TRUE(linear(x.data(), s.m, pw, y.data()));
          expectClose(y, expected(x, s, pw), x, pw, s,
                      dispatchTolerance(s.m, s.k, pw), isaName(isa));
        }
}

// Tests the oneDNN path's column slices: N with a narrower last slice, N
// below one slice, K on both sides of the blocked-layout limit, M in and
// between buckets; results are bitwise identical for 1 and 4 threads (the
// slices depend on N only) and within the bf16 bound of the reference.
TEST(Linear, DnnlSlicesMatchAcrossPools) {
  // M = 256 and 257: one full row block, then a full block plus a 1-row
  // (bucketed to 16) last block.
  const Shape shapes[] = {{70, 600, 96},   {130, 1000, 40}, {17, 50, 64},
                          {64, 520, 2050}, {5, 1088, 128},  {513, 200, 33},
                          {256, 130, 64},  {257, 130, 64}};
  for (DType storage : {DType::F32, DType::BF16})
    for (const Shape &s : shapes) {
      auto w = randomVector(size_t(s.n * s.k), 50);
      auto bias = randomVector(size_t(s.n), 51);
      auto x = randomVector(size_t(s.m * s.k), 52, -2, 2);
      PackedWeight pw;
      ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, s.n, s.k,
                                     bias.data(), storage, pw));
      std::vector<float> one(size_t(s.m * s.n)), four(one.size());
      ASSERT_TRUE(linear(x.data(), s.m, pw, one.data(), serialPool()));
      ASSERT_TRUE(linear(x.data(), s.m, pw, four.data(), parallelPool()));
      EXPECT_TRUE(bitwiseEqual(one, four)) << "m=" << s.m << " n=" << s.n;
      expectClose(four, expected(x, s, pw), x, pw, s,
                  dispatchTolerance(s.m, s.k, pw), "sliced");
    }
}

// Tests gatedLinear against linear() + gatedActivation over the same packed
// [2F, K] weight: bitwise equal (the fused tiles run the same primitives
// on the same slices, then the same row kernel), for F that is and is not
// a multiple of the slice width, M below, at and across oneDNN's row blocks,
// f32 and bf16, 1 and 4 threads; and close to the scalar reference.
TEST(Linear, GatedLinearMatchesUnfused) {
  struct Case {
    int64_t m, f, k;
  };
  const Case cases[] = {{1, 64, 96},    {3, 100, 40},   {5, 688, 256},
                        {17, 2048, 64}, {300, 96, 128}, {513, 200, 48},
                        {256, 128, 32}, {257, 128, 32}};
  for (DType storage : {DType::F32, DType::BF16})
    for (const Case &c : cases)
      for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
        auto w = randomVector(size_t(2 * c.f * c.k), 60);
        auto x = randomVector(size_t(c.m * c.k), 61, -2, 2);
        PackedWeight pw;
        ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, 2 * c.f, c.k,
                                       nullptr, storage, pw, false,
                                       /*gatedHalves=*/true));
        std::vector<float> gu(size_t(c.m * 2 * c.f)), want(size_t(c.m * c.f));
        ASSERT_TRUE(linear(x.data(), c.m, pw, gu.data(), parallelPool()));
        ASSERT_TRUE(gatedActivation(gu.data(), 2 * c.f, gu.data() + c.f,
                                    2 * c.f, want.data(), c.m, c.f, act,
                                    parallelPool()));
        std::vector<float> one(want.size()), four(want.size());
        ASSERT_TRUE(
            gatedLinear(x.data(), c.m, pw, act, one.data(), serialPool()));
        ASSERT_TRUE(
            gatedLinear(x.data(), c.m, pw, act, four.data(), parallelPool()));
        EXPECT_TRUE(bitwiseEqual(one, want))
            << "m=" << c.m << " f=" << c.f << " " << dtypeName(storage);
        EXPECT_TRUE(bitwiseEqual(four, want))
            << "m=" << c.m << " f=" << c.f << " " << dtypeName(storage);
        // And against the scalar reference on the stored weights: the
        // products' own bound (bf16 x on oneDNN: 2^-8 of sum |x w|),
        // carried through act (slope <= 1.13) times up, plus f32 slack.
        std::vector<float> ref(gu.size());
        ref::linear(x.data(), c.m, pw.data(), pw.storage(), nullptr, 2 * c.f,
                    c.k, ref.data());
        bool dnnlPath = c.m > kSmallM && pw.usesDnnl();
        double tol = storage == DType::BF16 && dnnlPath ? 1.0 / 256 : 1e-5;
        for (int64_t r = 0; r < c.m; ++r)
          for (int64_t j = 0; j < c.f; ++j) {
            double g = ref[size_t(r * 2 * c.f + j)];
            double u = ref[size_t(r * 2 * c.f + c.f + j)];
            double a = act == Activation::Silu
                           ? g / (1 + std::exp(-g))
                           : 0.5 * g *
                                 (1 + std::tanh(0.7978845608 *
                                                (g + 0.044715 * g * g * g)));
            double mag = 0;
            for (int64_t l = 0; l < c.k; ++l)
              mag += std::fabs(
                  double(x[size_t(r * c.k + l)]) *
                  loadAsFloat(pw.data(), pw.storage(), size_t(j * c.k + l)));
            double bound =
                tol * mag * (1.13 * std::fabs(u) + std::fabs(a) + tol * mag) +
                1e-5 * (std::fabs(a * u) + 1);
            ASSERT_NEAR(four[size_t(r * c.f + j)], a * u, bound)
                << "m=" << c.m << " f=" << c.f << " at (" << r << "," << j
                << ")";
          }
      }
}

// Tests that f16 and bf16 sources convert (f16 -> bf16 rounds once) and that
// borrowing keeps the caller's buffer.
TEST(Linear, PackConversionsAndBorrow) {
  int64_t n = 8, k = 40;
  auto w = randomVector(size_t(n * k), 46);
  auto f16 = encode(w, DType::F16);
  PackedWeight pw;
  ASSERT_TRUE(PackedWeight::pack(f16.data(), DType::F16, n, k, nullptr,
                                 DType::BF16, pw));
  EXPECT_EQ(pw.storage(), DType::BF16);
  EXPECT_EQ(pw.weightBytes(), size_t(n * k * 2));
  for (int64_t i = 0; i < n * k; ++i)
    ASSERT_EQ(loadAsFloat(pw.data(), DType::BF16, size_t(i)),
              roundTo({loadAsFloat(f16.data(), DType::F16, size_t(i))},
                      DType::BF16)[0]);

  auto bf16 = encode(w, DType::BF16);
  PackedWeight borrowed;
  ASSERT_TRUE(PackedWeight::pack(bf16.data(), DType::BF16, n, k, nullptr,
                                 DType::BF16, borrowed, /*borrow=*/true));
  EXPECT_EQ(borrowed.data(), bf16.data());
  PackedWeight moved = std::move(borrowed);
  EXPECT_EQ(moved.data(), bf16.data());
  auto x = randomVector(size_t(k), 47);
  std::vector<float> y(static_cast<size_t>(n));
  ASSERT_TRUE(linear(x.data(), 1, moved, y.data()));
  Shape s{1, n, k};
  expectClose(y, expected(x, s, moved), x, moved, s, 1e-5f, "borrowed");
}

// Tests that gate and up stacked into one [2F, K] weight (how the gated MLP
// packs them) give each half's outputs as the two weights would apart: the
// GEMV computes each output on its own, so bitwise; oneDNN may block the
// wider N differently, so within its rounding bound.
TEST(Linear, StackedWeightsMatchSeparate) {
  const int64_t f = 37, k = 45;
  for (DType storage : {DType::F32, DType::BF16})
    for (int64_t m : {1, 2, 3, 4, 5, 64, 512}) {
      auto gate = randomVector(size_t(f * k), 50);
      auto up = randomVector(size_t(f * k), 51);
      auto x = randomVector(size_t(m * k), 52, -2, 2);
      std::vector<float> both(gate);
      both.insert(both.end(), up.begin(), up.end());
      PackedWeight g, u, gu;
      ASSERT_TRUE(PackedWeight::pack(gate.data(), DType::F32, f, k, nullptr,
                                     storage, g));
      ASSERT_TRUE(
          PackedWeight::pack(up.data(), DType::F32, f, k, nullptr, storage, u));
      ASSERT_TRUE(PackedWeight::pack(both.data(), DType::F32, 2 * f, k, nullptr,
                                     storage, gu));
      std::vector<float> yg(size_t(m * f)), yu(yg.size()), y(2 * yg.size());
      ASSERT_TRUE(linear(x.data(), m, g, yg.data()));
      ASSERT_TRUE(linear(x.data(), m, u, yu.data()));
      ASSERT_TRUE(linear(x.data(), m, gu, y.data()));
      bool dnnlPath = m > kSmallM && gu.usesDnnl();
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < f; ++j) {
          float a = y[size_t(r * 2 * f + j)], b = y[size_t(r * 2 * f + f + j)];
          float wantA = yg[size_t(r * f + j)], wantB = yu[size_t(r * f + j)];
          if (dnnlPath) {
            ASSERT_NEAR(a, wantA, 1e-4f * (1 + std::fabs(wantA))) << m;
            ASSERT_NEAR(b, wantB, 1e-4f * (1 + std::fabs(wantB))) << m;
          } else {
            ASSERT_EQ(a, wantA) << "m=" << m << " (" << r << "," << j << ")";
            ASSERT_EQ(b, wantB) << "m=" << m << " (" << r << "," << j << ")";
          }
        }
    }
}

// Tests that weights share the huge-page chunks safely: each owns its
// slice (distinct, page aligned), and one outlives the others' release.
TEST(Linear, PackedWeightMemory) {
  const int64_t n = 24, k = 300;
  auto w = randomVector(size_t(n * k), 53);
  auto x = randomVector(size_t(k), 54);
  std::vector<PackedWeight> many(5);
  for (PackedWeight &pw : many)
    ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k, nullptr,
                                   DType::BF16, pw));
  for (size_t i = 0; i < many.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(many[i].data()) % 4096, 0u);
    for (size_t j = 0; j < i; ++j)
      EXPECT_NE(many[i].data(), many[j].data());
  }
  PackedWeight last = std::move(many.back());
  many.clear();
  // Memory released and taken again must not alias the survivor.
  PackedWeight fresh;
  ASSERT_TRUE(PackedWeight::pack(w.data(), DType::F32, n, k, nullptr,
                                 DType::BF16, fresh));
  EXPECT_NE(fresh.data(), last.data());
  std::vector<float> y(static_cast<size_t>(n));
  ASSERT_TRUE(linear(x.data(), 1, last, y.data()));
  Shape s{1, n, k};
  expectClose(y, expected(x, s, last), x, last, s, 1e-6f * float(k), "last");
}

TEST(Linear, EmptyAndInvalid) {
  std::vector<float> w(12, 1.0f);
  PackedWeight pw;
  ASSERT_TRUE(
      PackedWeight::pack(w.data(), DType::F32, 3, 4, nullptr, DType::F32, pw));
  EXPECT_TRUE(linear(nullptr, 0, pw, nullptr));
  PackedWeight empty;
  float x[4] = {}, y[3] = {};
  Status s = linear(x, 1, empty, y);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("not packed"), std::string::npos);
  EXPECT_FALSE(
      PackedWeight::pack(w.data(), DType::F32, 3, 4, nullptr, DType::F16, pw));
  EXPECT_FALSE(
      PackedWeight::pack(w.data(), DType::F32, 0, 4, nullptr, DType::F32, pw));
  // Weights are stored f32, bf16, int8, fp8_e4m3 or int4 (Int8LinearTest,
  // QuantLinearTest), never in a cache-only type, and come in as floats.
  for (DType t : {DType::FP8E4M3, DType::FP8E5M2, DType::I8, DType::I4}) {
    if (t == DType::FP8E5M2) {
      s = PackedWeight::pack(w.data(), DType::F32, 3, 4, nullptr, t, pw);
      EXPECT_FALSE(s) << dtypeName(t);
      EXPECT_NE(s.message().find(dtypeName(t)), std::string::npos);
    }
    EXPECT_FALSE(
        PackedWeight::pack(w.data(), t, 3, 4, nullptr, DType::BF16, pw));
  }
  EXPECT_FALSE(linear(x, -1, pw, y));
  // gatedLinear wants gate and up stacked: an even N and no bias.
  s = gatedLinear(x, 1, pw, Activation::Silu, y);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("gate and up stacked"), std::string::npos)
      << s.message();
}

} // namespace
