//===- QuantizedSourceTest.cpp - A model's own quantized weights ----------===//
//
// storePackedWeights given the codes and scales of weights a model brought
// quantized (QuantizedWeightSource): int4 blocks and per-row int8 are
// stored from those codes, nothing re-rounded but the int4 params to f16;
// what the storage cannot hold exactly is packed from the dequantized f32
// constant like any other weight.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/DType.h"
#include "codegen/CPU/WeightPack.h"
#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "runtime/Executor/StoredWeightView.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace folio;
using mlir::folio::QuantizedWeightSource;
using mlir::folio::StoreWeightsOptions;

namespace {

/// A random source of `rows` x `cols`, blocks of `rowBlock` x `colBlock`.
QuantizedWeightSource makeSource(int bits, int64_t rows, int64_t cols,
                                 int64_t rowBlock, int64_t colBlock, bool zeros,
                                 unsigned seed) {
  std::mt19937 rng(seed);
  QuantizedWeightSource q;
  q.bits = bits;
  q.rows = rows;
  q.cols = cols;
  q.rowBlock = rowBlock;
  q.colBlock = colBlock;
  q.scaleRows = (rows + rowBlock - 1) / rowBlock;
  q.scaleCols = (cols + colBlock - 1) / colBlock;
  int lo = bits == 4 ? -8 : -128, hi = bits == 4 ? 7 : 127;
  std::uniform_int_distribution<int> code(lo, hi);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (int64_t i = 0; i < rows * cols; ++i)
    q.codes.push_back(int8_t(code(rng)));
  for (int64_t i = 0; i < q.scaleRows * q.scaleCols; ++i) {
    q.scales.push_back(scale(rng));
    if (zeros)
      q.zeros.push_back(int8_t(code(rng)));
  }
  return q;
}

/// A plan of one linear x[T, K] @ W whose weight is `q`'s dequantized
/// values (out_in: W is [N, K]; in_out: [K, N]).
plan::Plan linearPlan(QuantizedWeightSource &q, bool outIn) {
  plan::Plan p;
  int64_t k = outIn ? q.cols : q.rows, n = outIn ? q.rows : q.cols;
  plan::ValueInfo x, w, y;
  x.dims = {-1, k};
  w.dims = {q.rows, q.cols};
  y.dims = {-1, n};
  int32_t xi = p.addValue(x), wi = p.addValue(w), yi = p.addValue(y);
  std::vector<float> values(size_t(q.rows * q.cols));
  for (int64_t i = 0; i < q.rows; ++i)
    for (int64_t j = 0; j < q.cols; ++j)
      values[size_t(i * q.cols + j)] = q.valueAt(i, j);
  uint64_t bytes = values.size() * 4;
  p.constants.push_back({wi, p.blob.append(values.data(), bytes), bytes});
  plan::Step s;
  s.kind = "linear";
  s.name = "proj";
  s.operands = {xi, wi};
  s.results = {yi};
  if (outIn)
    s.attrs.push_back({"weight_layout", plan::AttrValue("out_in")});
  p.steps.push_back(s);
  p.inputs.push_back({"x", xi});
  p.outputs.push_back(yi);
  q.value = wi;
  return p;
}

cpu::WeightView viewOf(const plan::Plan &p) {
  cpu::WeightView v;
  Status s = exec::storedWeightView(p, p.weights.at(0), v);
  EXPECT_TRUE(s) << s.message();
  return v;
}

llvm::Error store(plan::Plan &p, const QuantizedWeightSource &q,
                  plan::ElemType type, bool keep, int64_t group = 0) {
  std::vector<QuantizedWeightSource> sources = {q};
  StoreWeightsOptions o;
  o.type = type;
  o.groupSize = group;
  o.sources = &sources;
  o.keepSourceQuantization = keep;
  return mlir::folio::storePackedWeights(p, o);
}

TEST(QuantizedSource, Int4BlocksKeepTheirCodes) {
  // 3 output rows, K = 80: blocks of 32 along K, the last one 16 long, as
  // MatMulNBits has them ([N, K], out_in).
  QuantizedWeightSource q = makeSource(4, 3, 80, 1, 32, true, 1);
  plan::Plan p = linearPlan(q, /*outIn=*/true);
  ASSERT_FALSE(bool(store(p, q, plan::ElemType::BF16, /*keep=*/true)));
  ASSERT_EQ(p.weights.size(), 1u);
  EXPECT_EQ(p.weights[0].type, plan::ElemType::I4);
  EXPECT_EQ(p.weights[0].layout, plan::WeightLayout::Int4G32);
  // Kept without asking for int4: float compute, as its ONNX form has it,
  // unless the source allows int8 activations (accuracy_level 4).
  EXPECT_EQ(p.weights[0].activations, plan::ElemType::F32);
  QuantizedWeightSource level4 = q;
  level4.int8Activations = true;
  plan::Plan p4 = linearPlan(level4, /*outIn=*/true);
  ASSERT_FALSE(bool(store(p4, level4, plan::ElemType::BF16, /*keep=*/true)));
  EXPECT_EQ(p4.weights[0].activations, plan::ElemType::I8);
  EXPECT_TRUE(p.constants.empty()) << "the f32 copy stays in the plan";
  cpu::WeightView v = viewOf(p);
  ASSERT_TRUE(cpu::checkWeightView(v).ok());
  const auto *data = static_cast<const uint8_t *>(v.data);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 80; ++c) {
      EXPECT_EQ(int(cpu::int4CodeAt(data + r * cpu::int4RowBytes(80), c)),
                q.codes[size_t(r * 80 + c)] + 8)
          << r << ", " << c;
      // Only the scale and min are rounded (to f16): within 2^-10 of the
      // group's range.
      float want = q.valueAt(r, c), range = 15.0f * q.scaleAt(r, c);
      EXPECT_NEAR(cpu::weightViewAt(v, r, c), want, range / 1024 + 1e-6f)
          << r << ", " << c;
    }
}

TEST(QuantizedSource, NegativeScalesReverseTheCodes) {
  // ONNX Runtime's symmetric int4 quantizer writes negative scales (-8
  // takes the largest magnitude); int8 sources may too.
  QuantizedWeightSource q4 = makeSource(4, 2, 64, 1, 32, true, 7);
  QuantizedWeightSource q8 = makeSource(8, 64, 2, 64, 1, false, 8);
  for (float &s : q4.scales)
    s = -s;
  for (float &s : q8.scales)
    s = -s;
  for (int8_t &c : q8.codes) // -128 has no positive twin in int8
    c = c == -128 ? -127 : c;
  plan::Plan p4 = linearPlan(q4, true), p8 = linearPlan(q8, false);
  ASSERT_FALSE(bool(store(p4, q4, plan::ElemType::BF16, true)));
  ASSERT_FALSE(bool(store(p8, q8, plan::ElemType::BF16, true)));
  ASSERT_EQ(p4.weights[0].type, plan::ElemType::I4);
  ASSERT_EQ(p8.weights[0].type, plan::ElemType::I8);
  cpu::WeightView v4 = viewOf(p4), v8 = viewOf(p8);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 64; ++c) {
      EXPECT_EQ(int(cpu::int4CodeAt(static_cast<const uint8_t *>(v4.data) +
                                        r * cpu::int4RowBytes(64),
                                    c)),
                7 - q4.codes[size_t(r * 64 + c)]);
      float range = 15.0f * std::fabs(q4.scaleAt(r, c));
      EXPECT_NEAR(cpu::weightViewAt(v4, r, c), q4.valueAt(r, c),
                  range / 1024 + 1e-6f);
      EXPECT_EQ(cpu::weightViewAt(v8, r, c), q8.valueAt(c, r));
    }
  // With a -128 code the int8 form cannot hold it: packed from the values.
  q8.codes[0] = -128;
  plan::Plan again = linearPlan(q8, false);
  ASSERT_FALSE(bool(store(again, q8, plan::ElemType::BF16, true)));
  EXPECT_EQ(again.weights[0].type, plan::ElemType::BF16);
}

TEST(QuantizedSource, ExplicitInt4TakesTheSourceBlockUnlessAskedOtherwise) {
  QuantizedWeightSource q = makeSource(4, 4, 128, 1, 64, false, 2);
  plan::Plan same = linearPlan(q, true);
  ASSERT_FALSE(bool(store(same, q, plan::ElemType::I4, /*keep=*/false)));
  EXPECT_EQ(same.weights[0].layout, plan::WeightLayout::Int4G64);
  cpu::WeightView v = viewOf(same);
  for (int64_t c = 0; c < 128; ++c)
    EXPECT_EQ(int(cpu::int4CodeAt(static_cast<const uint8_t *>(v.data), c)),
              q.codes[size_t(c)] + 8);
  // Groups of 32 were asked for: the blocks of 64 are quantized again.
  QuantizedWeightSource q2 = q;
  plan::Plan other = linearPlan(q2, true);
  ASSERT_FALSE(bool(store(other, q2, plan::ElemType::I4, false, 32)));
  EXPECT_EQ(other.weights[0].layout, plan::WeightLayout::Int4G32);
  // Folio's int4 was asked for: int8 x is allowed either way.
  EXPECT_EQ(same.weights[0].activations, plan::ElemType::I8);
  EXPECT_EQ(other.weights[0].activations, plan::ElemType::I8);
}

TEST(QuantizedSource, Int4ActivationsAsAsked) {
  QuantizedWeightSource q = makeSource(4, 4, 128, 1, 64, false, 2);
  for (auto [asked, source] :
       {std::pair{plan::ElemType::I8, true}, {plan::ElemType::F32, false}}) {
    plan::Plan p = linearPlan(q, true);
    std::vector<QuantizedWeightSource> sources = {q};
    StoreWeightsOptions o;
    o.type = plan::ElemType::I4;
    o.groupSize = source ? 0 : 32;
    o.sources = &sources;
    o.int4Activations = asked;
    ASSERT_FALSE(bool(mlir::folio::storePackedWeights(p, o)));
    EXPECT_EQ(p.weights[0].activations, asked);
  }
  // Other dtypes keep f32 activations whatever was asked.
  QuantizedWeightSource q8 = makeSource(8, 16, 5, 16, 1, false, 3);
  plan::Plan p = linearPlan(q8, false);
  std::vector<QuantizedWeightSource> sources = {q8};
  StoreWeightsOptions o;
  o.type = plan::ElemType::I8;
  o.sources = &sources;
  o.int4Activations = plan::ElemType::I8;
  ASSERT_FALSE(bool(mlir::folio::storePackedWeights(p, o)));
  EXPECT_EQ(p.weights[0].activations, plan::ElemType::F32);
  for (const char *bad : {"int4", "bf16", ""}) {
    auto parsed = mlir::folio::parseInt4Activations(bad);
    ASSERT_FALSE(bool(parsed));
    EXPECT_NE(llvm::toString(parsed.takeError()).find("supported: f32, int8"),
              std::string::npos);
  }
}

TEST(QuantizedSource, PerChannelInt8KeepsCodesAndScales) {
  // QDQ over a MatMul weight [K = 16, N = 5] (in_out), one scale per
  // output column, no zero point.
  QuantizedWeightSource q = makeSource(8, 16, 5, 16, 1, false, 3);
  plan::Plan p = linearPlan(q, /*outIn=*/false);
  ASSERT_FALSE(bool(store(p, q, plan::ElemType::BF16, /*keep=*/true)));
  ASSERT_EQ(p.weights[0].type, plan::ElemType::I8);
  EXPECT_EQ(p.weights[0].numOutliers, 0);
  cpu::WeightView v = viewOf(p);
  for (int64_t n = 0; n < 5; ++n) {
    EXPECT_EQ(v.scales[n], q.scales[size_t(n)]);
    for (int64_t k = 0; k < 16; ++k) {
      EXPECT_EQ(static_cast<const int8_t *>(v.data)[n * 16 + k],
                q.codes[size_t(k * 5 + n)]);
      EXPECT_EQ(cpu::weightViewAt(v, n, k), q.valueAt(k, n));
    }
  }
}

TEST(QuantizedSource, WhatTheStorageCannotHoldIsPackedFromTheValues) {
  // int8 with zero points: not the symmetric int8 the kernels take.
  QuantizedWeightSource q = makeSource(8, 16, 5, 16, 1, true, 4);
  plan::Plan p = linearPlan(q, false);
  ASSERT_FALSE(bool(store(p, q, plan::ElemType::BF16, true)));
  EXPECT_EQ(p.weights[0].type, plan::ElemType::BF16);
  // int4 blocks of 16: no int4 group size of the kernels.
  QuantizedWeightSource q4 = makeSource(4, 2, 64, 1, 16, false, 5);
  plan::Plan p4 = linearPlan(q4, true);
  ASSERT_FALSE(bool(store(p4, q4, plan::ElemType::BF16, true)));
  EXPECT_EQ(p4.weights[0].type, plan::ElemType::BF16);
  // f32 asked for: the dequantized values, exactly.
  QuantizedWeightSource qf = makeSource(4, 2, 64, 1, 32, true, 6);
  plan::Plan pf = linearPlan(qf, true);
  ASSERT_FALSE(bool(store(pf, qf, plan::ElemType::F32, false)));
  ASSERT_EQ(pf.weights[0].type, plan::ElemType::F32);
  cpu::WeightView v = viewOf(pf);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 64; ++c)
      EXPECT_EQ(cpu::weightViewAt(v, r, c), qf.valueAt(r, c));
}

TEST(QuantizedSource, PackInt4CodesRefusesWhatIsNotACode) {
  std::vector<uint8_t> codes(32, 3);
  std::vector<uint16_t> params = {cpu::floatToF16(0.5f), cpu::floatToF16(-1)};
  cpu::WeightPacking out;
  EXPECT_TRUE(
      cpu::packInt4Codes(codes.data(), params.data(), 1, 32, 32, out).ok());
  EXPECT_EQ(cpu::weightViewAt(out.view(), 0, 5), -1.0f + 3 * 0.5f);
  codes[7] = 16;
  cpu::Status s =
      cpu::packInt4Codes(codes.data(), params.data(), 1, 32, 32, out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "packInt4Codes: code 16 of row 0, column 7 is not in [0, 15]");
  codes[7] = 3;
  params[1] = 0x7c00; // +inf
  s = cpu::packInt4Codes(codes.data(), params.data(), 1, 32, 32, out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "packInt4Codes: the min of group 0 of row 0 is not finite in f16");
  EXPECT_FALSE(
      cpu::packInt4Codes(codes.data(), params.data(), 1, 32, 48, out).ok());
}

} // namespace

namespace {

/// The stored weights of a zoo fixture compiled as folioc does without
/// --weight-dtype (or with `weightDtype`).
std::vector<plan::StoredWeight> storedWeights(const std::string &fixture,
                                              const std::string &weightDtype,
                                              bool keep) {
  mlir::folio::CompileToPlanOptions o;
  o.kvCacheDtype = "f32";
  o.weightDtype = weightDtype;
  o.keepSourceQuantization = keep;
  auto p = mlir::folio::compileONNXToPlan(
      FOLIO_SOURCE_DIR "/models/zoo-hf/" + fixture + ".onnx", o);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  return p->weights;
}

/// Every stored weight of the fixture compiled so is `type` in `layout`
/// (or `orLayout`).
void expectAll(const std::string &fixture, const std::string &weightDtype,
               bool keep, plan::ElemType type, plan::WeightLayout layout,
               plan::WeightLayout orLayout = plan::WeightLayout(0)) {
  SCOPED_TRACE(fixture + " " + weightDtype + (keep ? " keep" : ""));
  std::vector<plan::StoredWeight> weights =
      storedWeights(fixture, weightDtype, keep);
  ASSERT_FALSE(weights.empty());
  for (const plan::StoredWeight &w : weights) {
    EXPECT_EQ(w.type, type) << "step " << w.step;
    EXPECT_TRUE(w.layout == layout || w.layout == orLayout)
        << "step " << w.step << ": layout " << int(w.layout);
    EXPECT_EQ(w.numOutliers, 0) << "step " << w.step;
  }
}

// The already-quantized fixtures quantize every MatMul with a constant
// weight (lm_head included), so every stored weight keeps the source's form.
TEST(QuantizedSource, ImportedModelsKeepTheirOwnQuantization) {
  // MatMulNBits, 4 bits in blocks of 32 (symmetric) and 64 (zero points).
  expectAll("llama/genai_int4", "bf16", true, plan::ElemType::I4,
            plan::WeightLayout::Int4G32);
  // Blocks of 64 over K = 32 are one group per row: stored as groups of
  // 32, the same numbers.
  expectAll("llama/genai_int4_asym", "bf16", true, plan::ElemType::I4,
            plan::WeightLayout::Int4G64, plan::WeightLayout::Int4G32);
  // QDQ: int4 / uint4 blocks of 32 along K, int8 per output channel.
  expectAll("llama/qdq_int4", "bf16", true, plan::ElemType::I4,
            plan::WeightLayout::Int4G32);
  expectAll("llama/qdq_uint4", "bf16", true, plan::ElemType::I4,
            plan::WeightLayout::Int4G32);
  expectAll("llama/qdq_int8", "bf16", true, plan::ElemType::I8,
            plan::WeightLayout::RowsNK);
  // An explicit dtype stores every weight so.
  expectAll("llama/genai_int4", "bf16", false, plan::ElemType::BF16,
            plan::WeightLayout::RowsNK);
  expectAll("llama/qdq_int8", "int4", false, plan::ElemType::I4,
            plan::WeightLayout::Int4G128);
}

} // namespace
