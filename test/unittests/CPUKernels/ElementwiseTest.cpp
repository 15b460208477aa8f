//===- ElementwiseTest.cpp - Norms, activations, gathers ------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/Elementwise.h"
#include "codegen/CPU/Gather.h"
#include "codegen/CPU/Norm.h"
#include "codegen/CPU/Reference/Reference.h"
#include "codegen/CPU/WeightPack.h"

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

// Row lengths around the 16-lane vector width and a model-sized one.
const int64_t kDims[] = {1, 15, 16, 17, 33, 768};

TEST(Norm, RmsNormMatchesReference) {
  for (Isa isa : hostIsas())
    for (int64_t dim : kDims)
      for (float offset : {0.0f, 1.0f}) {
        IsaScope scope(isa);
        int64_t rows = 37;
        auto x = randomVector(size_t(rows * dim), 1, -3, 3);
        auto w = randomVector(size_t(dim), 2);
        std::vector<float> got(x.size()), want(x.size()), par(x.size());
        ASSERT_TRUE(rmsNorm(x.data(), w.data(), got.data(), rows, dim, 1e-6f,
                            offset, serialPool()));
        ASSERT_TRUE(rmsNorm(x.data(), w.data(), par.data(), rows, dim, 1e-6f,
                            offset, parallelPool()));
        ref::rmsNorm(x.data(), w.data(), want.data(), rows, dim, 1e-6f, offset);
        EXPECT_LE(maxAbsDiff(got, want), 1e-5f) << dim << isaName(isa);
        EXPECT_TRUE(bitwiseEqual(got, par));
      }
}

// Tests Gemma's (1 + w) with no weight tensor, and in-place use.
TEST(Norm, RmsNormOffsetOnlyInPlace) {
  auto x = randomVector(64, 3);
  std::vector<float> want(64);
  ref::rmsNorm(x.data(), nullptr, want.data(), 2, 32, 1e-5f, 1.0f);
  ASSERT_TRUE(rmsNorm(x.data(), nullptr, x.data(), 2, 32, 1e-5f, 1.0f));
  EXPECT_LE(maxAbsDiff(x, want), 1e-5f);
}

TEST(Norm, LayerNormMatchesReference) {
  for (Isa isa : hostIsas())
    for (int64_t dim : kDims)
      for (bool withBias : {false, true}) {
        IsaScope scope(isa);
        int64_t rows = 9;
        auto x = randomVector(size_t(rows * dim), 4, 2, 5); // mean far from 0
        auto w = randomVector(size_t(dim), 5);
        auto b = randomVector(size_t(dim), 6);
        const float *bias = withBias ? b.data() : nullptr;
        std::vector<float> got(x.size()), want(x.size());
        ASSERT_TRUE(layerNorm(x.data(), w.data(), bias, got.data(), rows, dim,
                              1e-5f, parallelPool()));
        ref::layerNorm(x.data(), w.data(), bias, want.data(), rows, dim, 1e-5f);
        EXPECT_LE(maxAbsDiff(got, want), 2e-5f) << dim << isaName(isa);
      }
}

// Tests that the residual add fused with the norm gives bitwise what the
// add followed by the norm gives, on every ISA, row count (0, 1, many) and
// row length, in place too.
TEST(Norm, AddNormMatchesAddThenNorm) {
  for (Isa isa : hostIsas())
    for (int64_t dim : kDims)
      for (int64_t rows : {int64_t(0), int64_t(1), int64_t(37)}) {
        IsaScope scope(isa);
        auto a = randomVector(size_t(rows * dim), 7, -3, 3);
        auto b = randomVector(size_t(rows * dim), 8, -3, 3);
        auto w = randomVector(size_t(dim), 9);
        auto bias = randomVector(size_t(dim), 10);
        std::vector<float> sum(a.size()), y(a.size()), wantSum(a.size()),
            want(a.size());
        ASSERT_TRUE(
            add(a.data(), b.data(), wantSum.data(), rows * dim, serialPool()));
        ASSERT_TRUE(rmsNorm(wantSum.data(), w.data(), want.data(), rows, dim,
                            1e-6f, 1.0f, serialPool()));
        ASSERT_TRUE(addRmsNorm(a.data(), b.data(), sum.data(), w.data(),
                               y.data(), rows, dim, 1e-6f, 1.0f,
                               parallelPool()));
        EXPECT_TRUE(bitwiseEqual(sum, wantSum)) << dim << isaName(isa);
        EXPECT_TRUE(bitwiseEqual(y, want)) << dim << isaName(isa);
        ASSERT_TRUE(layerNorm(wantSum.data(), w.data(), bias.data(),
                              want.data(), rows, dim, 1e-5f, serialPool()));
        std::vector<float> inPlace = a;
        ASSERT_TRUE(addLayerNorm(inPlace.data(), b.data(), inPlace.data(),
                                 w.data(), bias.data(), y.data(), rows, dim,
                                 1e-5f, parallelPool()));
        EXPECT_TRUE(bitwiseEqual(inPlace, wantSum)) << dim << isaName(isa);
        EXPECT_TRUE(bitwiseEqual(y, want)) << dim << isaName(isa);
      }
  float x[4] = {};
  EXPECT_FALSE(addRmsNorm(nullptr, x, x, nullptr, x, 1, 4, 1e-5f));
  EXPECT_FALSE(addLayerNorm(x, x, x, nullptr, nullptr, x, 1, 4, -1.0f));
}

TEST(Norm, RejectsBadShapes) {
  float x[4] = {};
  EXPECT_FALSE(rmsNorm(x, nullptr, x, 1, 0, 1e-5f));
  EXPECT_FALSE(rmsNorm(x, nullptr, x, -1, 4, 1e-5f));
  EXPECT_FALSE(rmsNorm(nullptr, nullptr, x, 1, 4, 1e-5f));
  Status s = layerNorm(x, nullptr, nullptr, x, 1, 4, -1.0f);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("eps"), std::string::npos);
  EXPECT_TRUE(rmsNorm(nullptr, nullptr, nullptr, 0, 4, 1e-5f)); // empty
}

TEST(Activation, MatchesReference) {
  for (Isa isa : hostIsas())
    for (Activation act :
         {Activation::Silu, Activation::GeluErf, Activation::GeluTanh}) {
      IsaScope scope(isa);
      auto x = randomVector(1000, 7, -12, 12);
      x.push_back(0.0f);
      x.push_back(1e-4f);
      x.push_back(-1e-4f);
      x.push_back(-90.0f);
      x.push_back(90.0f);
      std::vector<float> got(x.size());
      ASSERT_TRUE(activation(x.data(), got.data(), int64_t(x.size()), act));
      for (size_t i = 0; i < x.size(); ++i) {
        float want = ref::activation(x[i], act);
        ASSERT_NEAR(got[i], want, 2e-6f * (1.0f + std::fabs(want)))
            << activationName(act) << " x=" << x[i] << " " << isaName(isa);
      }
    }
}

// Tests the gated form on the two halves of a fused gate_up buffer.
TEST(Activation, GatedOnFusedBuffer) {
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    int64_t rows = 5, dim = 37;
    auto buf = randomVector(size_t(rows * 2 * dim), 8, -4, 4);
    std::vector<float> got(size_t(rows * dim)), par(got.size());
    for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
      ASSERT_TRUE(gatedActivation(buf.data(), 2 * dim, buf.data() + dim,
                                  2 * dim, got.data(), rows, dim, act,
                                  serialPool()));
      ASSERT_TRUE(gatedActivation(buf.data(), 2 * dim, buf.data() + dim,
                                  2 * dim, par.data(), rows, dim, act,
                                  parallelPool()));
      EXPECT_TRUE(bitwiseEqual(got, par));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) {
          float g = buf[size_t(r * 2 * dim + i)];
          float u = buf[size_t(r * 2 * dim + dim + i)];
          ASSERT_NEAR(got[size_t(r * dim + i)], ref::activation(g, act) * u,
                      1e-5f);
        }
    }
  }
  float x[2] = {};
  EXPECT_FALSE(gatedActivation(x, 1, x, 1, x, 2, 2, Activation::Silu));
}

TEST(Elementwise, AddSoftmaxSoftCap) {
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    auto a = randomVector(1000, 9, -20, 20), b = randomVector(1000, 10);
    std::vector<float> y(1000);
    ASSERT_TRUE(add(a.data(), b.data(), y.data(), 1000));
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], a[i] + b[i]);

    for (int64_t dim : kDims) {
      auto x = randomVector(size_t(3 * dim), 11, -30, 30);
      x[0] = -INFINITY; // a masked entry
      std::vector<float> got(x.size()), want(x.size());
      ASSERT_TRUE(softmax(x.data(), got.data(), 3, dim));
      ref::softmax(x.data(), want.data(), 3, dim);
      EXPECT_LE(maxAbsDiff(got, want), 1e-6f) << dim;
    }
    std::vector<float> masked(8, -INFINITY), out(8, 1.0f);
    ASSERT_TRUE(softmax(masked.data(), out.data(), 1, 8));
    EXPECT_EQ(out, std::vector<float>(8, 0.0f));

    ASSERT_TRUE(softCap(a.data(), y.data(), 1000, 30.0f));
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], ref::softCap(a[i], 30.0f), 1e-5f);
  }
  float x[1] = {};
  EXPECT_FALSE(softCap(x, x, 1, 0.0f));
  EXPECT_FALSE(softmax(x, x, 1, 0));
}

TEST(Gather, EmbeddingAllTypes) {
  int64_t vocab = 50, dim = 33;
  auto table = randomVector(size_t(vocab * dim), 12);
  std::vector<int32_t> ids = {0, 49, 7, 7, 3};
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (float scale : {1.0f, 5.5f}) {
      auto enc = encode(table, t);
      std::vector<float> got(ids.size() * size_t(dim)), want(got.size());
      ASSERT_TRUE(embedding(ids.data(), int64_t(ids.size()), enc.data(), t,
                            vocab, dim, got.data(), scale, parallelPool()));
      ref::embedding(ids.data(), int64_t(ids.size()), enc.data(), t, dim, scale,
                     want.data());
      EXPECT_TRUE(bitwiseEqual(got, want)) << dtypeName(t);
    }
  std::vector<float> out(static_cast<size_t>(dim));
  int32_t bad = 50;
  Status s =
      embedding(&bad, 1, table.data(), DType::F32, vocab, dim, out.data());
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("50"), std::string::npos);
  EXPECT_TRUE(
      embedding(nullptr, 0, table.data(), DType::F32, vocab, dim, nullptr));
  // Tables are never of a cache-only type.
  for (DType t : {DType::FP8E4M3, DType::FP8E5M2, DType::I8, DType::I4}) {
    s = embedding(ids.data(), 1, table.data(), t, vocab, dim, out.data());
    EXPECT_FALSE(s) << dtypeName(t);
    EXPECT_NE(s.message().find(dtypeName(t)), std::string::npos);
  }
}

TEST(Gather, EmbeddingRowsOfEveryPackedTable) {
  // A tied table stored once as its lm_head's packing: each looked-up
  // element is weightViewAt's value times the scale, bit for bit. k covers
  // one partial int4 block (45, too short for outlier columns), whole
  // blocks (256) and a short last group
  // with a partial block (300); a few columns stand far out so int8 keeps
  // them in bf16 (its outlier path).
  std::vector<int32_t> ids = {0, 40, 7, 7, 3, 40};
  for (int64_t k : {45, 256, 300})
    for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I8,
                    DType::FP8E4M3, DType::I4})
      for (int64_t group : {int64_t(32), int64_t(128)}) {
        if (t != DType::I4 && group != 32)
          continue;
        const int64_t n = 41;
        auto w = randomVector(size_t(n * k), uint32_t(k));
        for (int64_t r = 0; r < n; ++r)
          w[size_t(r * k + 5)] *= 300.0f;
        WeightPacking p;
        ASSERT_TRUE(
            packWeightRows(w.data(), n, k, t, p, t == DType::I4 ? group : 0)
                .ok());
        WeightView v = p.view();
        if (t == DType::I8 && k >= kMaxOutlierFraction) {
          ASSERT_GT(v.numOutliers, 0);
        }
        for (float scale : {1.0f, 5.5f}) {
          std::vector<float> got(ids.size() * size_t(k), -1.0f);
          ASSERT_TRUE(embeddingRows(ids.data(), int64_t(ids.size()), v,
                                    got.data(), scale, parallelPool()));
          for (size_t i = 0; i < ids.size(); ++i)
            for (int64_t c = 0; c < k; ++c)
              ASSERT_EQ(got[i * size_t(k) + size_t(c)],
                        weightViewAt(v, ids[i], c) * scale)
                  << dtypeName(t) << " k " << k << " group " << group
                  << " token " << i << " column " << c;
        }
      }
  // No tokens; an id outside the rows; a view that is not a packed weight.
  WeightPacking p;
  auto w = randomVector(8 * 64, 3);
  ASSERT_TRUE(packWeightRows(w.data(), 8, 64, DType::I8, p).ok());
  EXPECT_TRUE(embeddingRows(nullptr, 0, p.view(), nullptr));
  std::vector<float> out(64);
  for (int32_t bad : {8, -1}) {
    Status s = embeddingRows(&bad, 1, p.view(), out.data());
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("token id " + std::to_string(bad)),
              std::string::npos)
        << s.message();
  }
  WeightView broken = p.view();
  broken.scales = nullptr;
  int32_t id = 0;
  EXPECT_FALSE(embeddingRows(&id, 1, broken, out.data()));
}

TEST(Gather, Rows) {
  auto src = randomVector(40, 13);
  std::vector<int32_t> idx = {3, 0, 3, 9};
  std::vector<float> out(16);
  ASSERT_TRUE(gatherRows(src.data(), 10, 4, idx.data(), 4, out.data()));
  for (size_t i = 0; i < idx.size(); ++i)
    for (size_t d = 0; d < 4; ++d)
      ASSERT_EQ(out[i * 4 + d], src[size_t(idx[i]) * 4 + d]);
  int32_t neg = -1;
  EXPECT_FALSE(gatherRows(src.data(), 10, 4, &neg, 1, out.data()));
  EXPECT_TRUE(gatherRows(src.data(), 10, 4, nullptr, 0, nullptr));
}

} // namespace
