//===- StepKernelTest.cpp - Elementwise and data-movement steps -----------===//

#include "runtime/Executor/StepKernel.h"
#include "runtime/Executor/Executor.h"

#include "test/unittests/Executor/RunStep.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

using namespace folio;
using namespace folio::exec;
using folio::exec::test::runStep;

namespace {

Tensor ints(std::vector<int64_t> v, Shape shape) {
  Tensor t = Tensor::allocate(ElemType::I64, std::move(shape));
  std::memcpy(t.data, v.data(), v.size() * 8);
  return t;
}

Tensor floats(std::vector<float> v, Shape shape) {
  Tensor t = Tensor::allocate(ElemType::F32, std::move(shape));
  std::memcpy(t.data, v.data(), v.size() * 4);
  return t;
}

std::vector<float> values(const Tensor &t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

TEST(FolioOps, ReshapeIsAViewAndInfersTheTokenDim) {
  std::vector<Tensor> r;
  Tensor x = Tensor::allocate(ElemType::F32, {1, 6, 32});
  ASSERT_TRUE(
      runStep("reshape", {x}, r, {{"shape", std::vector<int64_t>{-1, 4, 8}}}));
  EXPECT_EQ(r[0].shape, (Shape{6, 4, 8}));
  EXPECT_EQ(r[0].data, x.data);
  ASSERT_TRUE(
      runStep("reshape", {x}, r, {{"shape", std::vector<int64_t>{1, 6, 32}}}));
  EXPECT_EQ(r[0].shape, (Shape{1, 6, 32}));
  Status s =
      runStep("reshape", {x}, r, {{"shape", std::vector<int64_t>{-1, 5}}});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "reshape: cannot reshape [1, 6, 32] to [-1, 5]");
  s = runStep("reshape", {x}, r, {{"shape", std::vector<int64_t>{-1, -1, 8}}});
  EXPECT_EQ(s.message(), "reshape: bad target shape [-1, -1, 8]");
  s = runStep("reshape", {x}, r, {{"shape", std::vector<int64_t>{7}}});
  EXPECT_EQ(s.message(), "reshape: cannot reshape [1, 6, 32] (192 "
                         "elements) to [7]");
}

TEST(FolioOps, TransposeMovesData) {
  std::vector<Tensor> r;
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {1, 2, 3, 1});
  ASSERT_TRUE(runStep("transpose", {x}, r,
                      {{"permutation", std::vector<int64_t>{0, 2, 1, 3}}}));
  EXPECT_EQ(r[0].shape, (Shape{1, 3, 2, 1}));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Innermost dim kept (row copies) and moved (element walk).
  Tensor y = floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  ASSERT_TRUE(runStep("transpose", {y}, r,
                      {{"permutation", std::vector<int64_t>{1, 0, 2}}}));
  EXPECT_EQ(r[0].shape, (Shape{3, 2, 2}));
  EXPECT_EQ(values(r[0]),
            (std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  ASSERT_TRUE(runStep("transpose", {y}, r,
                      {{"permutation", std::vector<int64_t>{2, 0, 1}}}));
  EXPECT_EQ(r[0].shape, (Shape{2, 2, 3}));
  EXPECT_EQ(values(r[0]),
            (std::vector<float>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  Status s = runStep("transpose", {x}, r,
                     {{"permutation", std::vector<int64_t>{0, 0, 1, 3}}});
  EXPECT_EQ(s.message(), "transpose: perm is not a permutation");
}

TEST(FolioOps, ConcatJoinsAlongAnAxis) {
  std::vector<Tensor> r;
  Tensor a = floats({0, 1, 2, 3}, {2, 2}), b = floats({4, 5}, {2, 1});
  ASSERT_TRUE(runStep("concat", {a, b}, r, {{"axis", int64_t(1)}}));
  EXPECT_EQ(r[0].shape, (Shape{2, 3}));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 1, 4, 2, 3, 5}));
  Status s = runStep("concat", {a, b}, r, {{"axis", int64_t(0)}});
  EXPECT_EQ(s.message(), "concat: input 1 has shape [2, 1], "
                         "incompatible with [2, 2]");
}

TEST(FolioOps, BroadcastingArithmetic) {
  std::vector<Tensor> r;
  auto kind = [](const char *k) {
    return std::vector<plan::Attr>{{"kind", std::string(k)}};
  };
  Tensor a = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  ASSERT_TRUE(
      runStep("binary", {a, floats({10, 20, 30}, {3})}, r, kind("add")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  ASSERT_TRUE(runStep("binary", {floats({2, 3}, {2, 1}), a}, r, kind("mul")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{2, 4, 6, 12, 15, 18}));
  ASSERT_TRUE(runStep("binary", {a, floats({3}, {})}, r, kind("pow")));
  EXPECT_EQ(values(r[0])[1], 8.0f);
  ASSERT_TRUE(runStep("binary", {a, floats({3.5f}, {})}, r, kind("max")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{3.5f, 3.5f, 3.5f, 4, 5, 6}));
  ASSERT_TRUE(runStep("binary", {a, floats({3.5f}, {})}, r, kind("min")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{1, 2, 3, 3.5f, 3.5f, 3.5f}));
  ASSERT_TRUE(
      runStep("binary", {ints({5, 7}, {2}), ints({1}, {1})}, r, kind("sub")));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{4, 6}));
  Status s = runStep("binary", {a, floats({1, 2}, {2})}, r, kind("add"));
  EXPECT_EQ(s.message(), "binary: shapes [2, 3] and [2] do not broadcast");
  s = runStep("binary", {a, ints({1}, {1})}, r, kind("add"));
  EXPECT_EQ(s.message(),
            "binary: operands differ in element type (f32 vs i64)");
  s = runStep("binary", {a, a}, r, kind("hypot"));
  EXPECT_EQ(s.message(), "binary '': unknown kind 'hypot'");
}

TEST(FolioOps, UnaryActivations) {
  std::vector<Tensor> r;
  auto kind = [](const char *k) {
    return std::vector<plan::Attr>{{"kind", std::string(k)}};
  };
  ASSERT_TRUE(runStep("unary", {floats({0, 100}, {2})}, r, kind("tanh")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 1}));
  ASSERT_TRUE(runStep("unary", {floats({0}, {1})}, r, kind("erf")));
  EXPECT_EQ(values(r[0])[0], 0.0f);
  ASSERT_TRUE(runStep("unary", {floats({-2, 3}, {2})}, r, kind("relu")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 3}));
  ASSERT_TRUE(runStep("unary", {floats({-2, 4}, {2})}, r, kind("reciprocal")));
  EXPECT_EQ(values(r[0]), (std::vector<float>{-0.5f, 0.25f}));
  Status s = runStep("unary", {ints({1}, {1})}, r, kind("tanh"));
  EXPECT_EQ(s.message(), "unary: expects f32");
}

TEST(FolioOps, CastsIntegersAndFloats) {
  std::vector<Tensor> r;
  Tensor i32 = Tensor::allocate(ElemType::I32, {3});
  i32.as<int32_t>()[2] = -5;
  ASSERT_TRUE(runStep("cast", {i32}, r, {{"to", std::string("i64")}}));
  EXPECT_EQ(r[0].type, ElemType::I64);
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{0, 0, -5}));
  // f32 -> bf16 rounds to nearest even; back to f32 is exact.
  ASSERT_TRUE(runStep("cast", {floats({1.0f, 1.00390625f, -3.5f}, {3})}, r,
                      {{"to", std::string("bf16")}}));
  EXPECT_EQ(r[0].type, ElemType::BF16);
  ASSERT_TRUE(runStep("cast", {r[0]}, r, {{"to", std::string("f32")}}));
  EXPECT_EQ(values(r[0]), (std::vector<float>{1.0f, 1.0f, -3.5f}));
  Status s = runStep("cast", {i32}, r, {{"to", std::string("f32")}});
  EXPECT_EQ(s.message(), "cast: casts within integers or within floats only");
}

/// A plan of one value and the one step `s` writing it, in an elementwise
/// kernel unless `kernel` is false.
std::shared_ptr<plan::Plan> oneStepPlan(plan::Step s, bool kernel = true) {
  auto p = std::make_shared<plan::Plan>();
  p->values.push_back({});
  s.results = {0};
  p->steps.push_back(std::move(s));
  if (kernel)
    p->kernels.push_back({"elementwise", 0, 1, {}, {0}, {}});
  return p;
}

TEST(CPUExecutor, RefusesUnknownStepKindsAtLoad) {
  plan::Step s;
  s.kind = "onnx.NonZero";
  s.name = "/model/nz";
  auto p = oneStepPlan(s, /*kernel=*/false);
  auto ex = createCPUExecutor();
  Status st = ex->load(p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(),
            "the plan has steps but no kernels (recompile it with folioc)");
  p = oneStepPlan(s);
  st = ex->load(p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "the CPU executor has no kernel for step kind "
                          "'onnx.NonZero' (node '/model/nz')");
}

TEST(CPUExecutor, ChecksArityAndBatchArrays) {
  plan::Step s;
  s.kind = "binary";
  s.operands = {0};
  auto p = oneStepPlan(s);
  auto ex = createCPUExecutor();
  Status st = ex->load(p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "binary '': 1 operands is not a valid arity");

  auto empty = std::make_shared<plan::Plan>();
  ASSERT_TRUE(ex->load(empty));
  std::vector<float> logits;
  int64_t vocab = 0;
  st = ex->forward(ForwardBatch(), logits, vocab);
  EXPECT_EQ(st.message(),
            "forward needs a loaded plan and an allocated KV cache");
}

// Tests that a required operand given as absent (-1) is refused at load:
// kernels read required operands without asking.
TEST(CPUExecutor, RefusesAbsentRequiredOperands) {
  plan::Step s;
  s.kind = "binary";
  s.name = "/model/add";
  s.attrs = {{"kind", std::string("add")}};
  s.operands = {0, -1};
  auto p = oneStepPlan(s);
  auto ex = createCPUExecutor();
  Status st = ex->load(p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(),
            "binary '/model/add': operand 1 is required but absent");
}
} // namespace

namespace {

TEST(LinearInputRecorder, KeepsTheLargestMagnitudePerColumnAndNaN) {
  LinearInputRecorder rec;
  const float a[] = {1, -5, 2, /**/ -3, 4, 0}; // 2 rows, k = 3
  rec.record(4, 1, a, 2, 3);
  const float b[] = {-2, 1, NAN};
  rec.record(4, 1, b, 1, 3);
  const float c[] = {7};
  rec.record(4, 3, c, 1, 1);
  rec.record(1, 1, c, 1, 1);
  auto m = rec.absMax();
  ASSERT_EQ(m.size(), 3u);
  // Keyed by (step, operand): plan order.
  EXPECT_EQ(m.begin()->first, std::make_pair(int32_t(1), int32_t(1)));
  const std::vector<float> &v = m.at({4, 1});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], 3.0f);
  EXPECT_EQ(v[1], 5.0f);
  EXPECT_TRUE(std::isnan(v[2])); // a NaN input is never hidden by a max
  const float d[] = {100, 100, 100};
  rec.record(4, 1, d, 1, 3);
  EXPECT_TRUE(std::isnan(rec.absMax().at({4, 1})[2]));
  EXPECT_EQ(rec.absMax().at({4, 1})[0], 100.0f);
  EXPECT_EQ(m.at({4, 3}), std::vector<float>{7.0f});
}

TEST(LinearInputRecorder, ThreadsMergeToTheSameResult) {
  LinearInputRecorder rec;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&rec, t] {
      for (int i = 0; i < 100; ++i) {
        float x[2] = {float(t * 100 + i), -float(i)};
        rec.record(0, 1, x, 1, 2);
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(rec.absMax().at({0, 1}), (std::vector<float>{399.0f, 99.0f}));
}

} // namespace
