//===- StepKernelTest.cpp - Reference ONNX ops and shape logic ------------===//

#include "runtime/Executor/StepKernel.h"
#include "runtime/Executor/Executor.h"

#include "test/unittests/Executor/RunStep.h"

#include <gtest/gtest.h>

#include <cstring>

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

TEST(OnnxOps, ShapeGatherUnsqueezeConcatBuildAReshapeTarget) {
  std::vector<Tensor> r;
  Tensor x = Tensor::allocate(ElemType::F32, {1, 5, 32});
  ASSERT_TRUE(runStep("onnx.Shape", {x}, r));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{1, 5, 32}));
  Tensor shape = r[0];
  ASSERT_TRUE(runStep("onnx.Gather", {shape, ints({1}, {})}, r,
                      {{"axis", int64_t(0)}}));
  EXPECT_EQ(r[0].shape, Shape{});
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{5}));
  ASSERT_TRUE(runStep("onnx.Unsqueeze", {r[0], ints({0}, {1})}, r));
  EXPECT_EQ(r[0].shape, (Shape{1}));
  Tensor seq = r[0];
  ASSERT_TRUE(runStep("onnx.Concat",
                      {ints({1}, {1}), seq, ints({4}, {1}), ints({8}, {1})}, r,
                      {{"axis", int64_t(0)}}));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{1, 5, 4, 8}));
  ASSERT_TRUE(runStep("onnx.Reshape", {x, r[0]}, r));
  EXPECT_EQ(r[0].shape, (Shape{1, 5, 4, 8}));
  ASSERT_TRUE(runStep("onnx.Shape", {x}, r,
                      {{"start", int64_t(-2)}, {"end", int64_t(3)}}));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{5, 32}));
}

TEST(OnnxOps, ReshapeZeroCopiesAndMinusOneInfers) {
  std::vector<Tensor> r;
  Tensor x = Tensor::allocate(ElemType::F32, {2, 3, 4});
  ASSERT_TRUE(runStep("onnx.Reshape", {x, ints({0, -1}, {2})}, r));
  EXPECT_EQ(r[0].shape, (Shape{2, 12}));
  Status s = runStep("onnx.Reshape", {x, ints({5, -1}, {2})}, r);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "onnx.Reshape: cannot reshape [2, 3, 4] to [5, -1]");
  s = runStep("onnx.Reshape", {x, ints({-1, -1}, {2})}, r);
  EXPECT_EQ(s.message(), "onnx.Reshape: more than one -1 in the shape");
}

TEST(OnnxOps, TransposeMovesData) {
  std::vector<Tensor> r;
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {1, 2, 3, 1});
  ASSERT_TRUE(runStep("onnx.Transpose", {x}, r,
                      {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  EXPECT_EQ(r[0].shape, (Shape{1, 3, 2, 1}));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // Innermost dim kept (row copies) and moved (element walk).
  Tensor y = floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  ASSERT_TRUE(runStep("onnx.Transpose", {y}, r,
                      {{"perm", std::vector<int64_t>{1, 0, 2}}}));
  EXPECT_EQ(r[0].shape, (Shape{3, 2, 2}));
  EXPECT_EQ(values(r[0]),
            (std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  ASSERT_TRUE(runStep("onnx.Transpose", {y}, r,
                      {{"perm", std::vector<int64_t>{2, 0, 1}}}));
  EXPECT_EQ(r[0].shape, (Shape{2, 2, 3}));
  EXPECT_EQ(values(r[0]),
            (std::vector<float>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  Status s = runStep("onnx.Transpose", {x}, r,
                     {{"perm", std::vector<int64_t>{0, 0, 1, 3}}});
  EXPECT_EQ(s.message(), "onnx.Transpose: perm is not a permutation");
}

TEST(OnnxOps, GatherNegativeAndOutOfRangeIndices) {
  std::vector<Tensor> r;
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {3, 2});
  ASSERT_TRUE(runStep("onnx.Gather", {x, ints({-1, 0}, {2})}, r));
  EXPECT_EQ(values(r[0]), (std::vector<float>{4, 5, 0, 1}));
  ASSERT_TRUE(
      runStep("onnx.Gather", {x, ints({1}, {1})}, r, {{"axis", int64_t(1)}}));
  EXPECT_EQ(values(r[0]), (std::vector<float>{1, 3, 5}));
  Status s = runStep("onnx.Gather", {x, ints({3}, {1})}, r);
  EXPECT_EQ(s.message(), "onnx.Gather: index 3 is out of range for a dim of 3");
}

TEST(OnnxOps, SliceAndSplit) {
  std::vector<Tensor> r;
  Tensor x = floats({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4});
  // x[:, 1:-1]
  ASSERT_TRUE(runStep("onnx.Slice",
                      {x, ints({1}, {1}), ints({-1}, {1}), ints({1}, {1})}, r));
  EXPECT_EQ(values(r[0]), (std::vector<float>{1, 2, 5, 6}));
  // x[:, ::-2]
  ASSERT_TRUE(runStep(
      "onnx.Slice",
      {x, ints({-1}, {1}), ints({-100}, {1}), ints({1}, {1}), ints({-2}, {1})},
      r));
  EXPECT_EQ(values(r[0]), (std::vector<float>{3, 1, 7, 5}));
  ASSERT_TRUE(runStep("onnx.Split", {x, ints({1, 3}, {2})}, r,
                      {{"axis", int64_t(1)}}, 2));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 4}));
  EXPECT_EQ(values(r[1]), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  Status s = runStep("onnx.Split", {x, ints({1, 2}, {2})}, r,
                     {{"axis", int64_t(1)}}, 2);
  EXPECT_EQ(s.message(), "onnx.Split: split sizes do not cover dim 4");
}

TEST(OnnxOps, BroadcastingArithmetic) {
  std::vector<Tensor> r;
  Tensor a = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  ASSERT_TRUE(runStep("onnx.Add", {a, floats({10, 20, 30}, {3})}, r));
  EXPECT_EQ(values(r[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  ASSERT_TRUE(runStep("onnx.Mul", {floats({2, 3}, {2, 1}), a}, r));
  EXPECT_EQ(values(r[0]), (std::vector<float>{2, 4, 6, 12, 15, 18}));
  ASSERT_TRUE(runStep("onnx.Pow", {a, floats({3}, {})}, r));
  EXPECT_EQ(values(r[0])[1], 8.0f);
  ASSERT_TRUE(runStep("onnx.Sub", {ints({5, 7}, {2}), ints({1}, {1})}, r));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{4, 6}));
  Status s = runStep("onnx.Add", {a, floats({1, 2}, {2})}, r);
  EXPECT_EQ(s.message(), "onnx.Add: shapes [2, 3] and [2] do not broadcast");
  s = runStep("onnx.Add", {a, ints({1}, {1})}, r);
  EXPECT_EQ(s.message(),
            "onnx.Add: operands differ in element type (f32 vs i64)");
}

TEST(OnnxOps, UnaryActivations) {
  std::vector<Tensor> r;
  ASSERT_TRUE(runStep("onnx.Tanh", {floats({0, 100}, {2})}, r));
  EXPECT_EQ(values(r[0]), (std::vector<float>{0, 1}));
  ASSERT_TRUE(runStep("onnx.Erf", {floats({0}, {1})}, r));
  EXPECT_EQ(values(r[0])[0], 0.0f);
  Status s = runStep("onnx.Tanh", {ints({1}, {1})}, r);
  EXPECT_EQ(s.message(), "onnx.Tanh: expects f32");
}

TEST(TensorOps, ExpandCollapseAndDim) {
  std::vector<Tensor> r;
  Tensor x = Tensor::allocate(ElemType::F32, {6, 4, 8});
  ASSERT_TRUE(runStep("tensor.dim", {x, ints({0}, {})}, r));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{6}));
  ASSERT_TRUE(
      runStep("tensor.expand_shape", {x, r[0]}, r,
              {{"static_output_shape", std::vector<int64_t>{1, -1, 4, 8}}}));
  EXPECT_EQ(r[0].shape, (Shape{1, 6, 4, 8}));
  EXPECT_EQ(r[0].data, x.data); // a view, not a copy
  ASSERT_TRUE(runStep("tensor.collapse_shape", {r[0]}, r,
                      {{"group_sizes", std::vector<int64_t>{2, 1, 1}}}));
  EXPECT_EQ(r[0].shape, (Shape{6, 4, 8}));
  Status s = runStep("tensor.collapse_shape", {x}, r,
                     {{"group_sizes", std::vector<int64_t>{1, 1}}});
  EXPECT_EQ(s.message(),
            "tensor.collapse_shape: reassociation does not cover every input "
            "dim");
  Tensor i32 = Tensor::allocate(ElemType::I32, {3});
  i32.as<int32_t>()[2] = -5;
  ASSERT_TRUE(runStep("arith.extsi", {i32}, r, {{"to", std::string("i64")}}));
  EXPECT_EQ(r[0].ints(), (std::vector<int64_t>{0, 0, -5}));
}

TEST(CPUExecutor, RefusesUnknownStepKindsAtLoad) {
  auto p = std::make_shared<plan::Plan>();
  p->values.push_back({});
  plan::Step s;
  s.kind = "onnx.NonZero";
  s.name = "/model/nz";
  s.results = {0};
  p->steps.push_back(s);
  auto ex = createCPUExecutor();
  Status st = ex->load(p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "the CPU executor has no kernel for step kind "
                          "'onnx.NonZero' (node '/model/nz')");
}

TEST(CPUExecutor, ChecksArityAndBatchArrays) {
  auto p = std::make_shared<plan::Plan>();
  p->values.push_back({});
  plan::Step s;
  s.kind = "onnx.Add";
  s.operands = {0};
  s.results = {0};
  p->steps.push_back(s);
  auto ex = createCPUExecutor();
  Status st = ex->load(p);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "onnx.Add '': 1 operands is not a valid arity");

  auto empty = std::make_shared<plan::Plan>();
  ASSERT_TRUE(ex->load(empty));
  std::vector<float> logits;
  int64_t vocab = 0;
  st = ex->forward(ForwardBatch(), logits, vocab);
  EXPECT_EQ(st.message(),
            "forward needs a loaded plan and an allocated KV cache");
}

} // namespace
