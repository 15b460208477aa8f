//===- EvaluatorBoundsTest.cpp - The evaluator refuses huge tensors -------===//
//
// The raise passes evaluate mask and angle subgraphs concretely. A shape
// input of 2^62 elements (or one whose product overflows) must make the
// evaluator give up with its error, never allocate or abort.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/ShapeInference.h"
#include "compiler/RaiseAttention/Evaluator.h"
#include "compiler/Registration/RegisterAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::folio;

namespace {

const char *kModule = R"mlir(
func.func @f(%s: tensor<2xi64>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %x = arith.constant dense<1.0> : tensor<1xf32>
  %e = folio.onnx_node "Expand"(%x, %s) {opset = 17 : i64}
      : (tensor<1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %c = folio.onnx_node "ConstantOfShape"(%s) {opset = 17 : i64}
      : (tensor<2xi64>) -> tensor<?x?xf32>
  return %e, %c : tensor<?x?xf32>, tensor<?x?xf32>
}
)mlir";

class EvaluatorBoundsTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registerFolioDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kModule, &context);
    ASSERT_TRUE(module);
    func = module->lookupSymbol<func::FuncOp>("f");
    ASSERT_TRUE(succeeded(inference.run(func)));
  }

  /// Evaluates result `i` of @f with the shape argument bound to `shape`.
  const ConcreteTensor *evaluate(unsigned i, std::vector<double> shape,
                                 std::string &error) {
    evaluator = std::make_unique<ONNXEvaluator>(inference);
    ConcreteTensor s;
    s.kind = ConcreteTensor::Kind::Int;
    s.shape = {int64_t(shape.size())};
    s.data = std::move(shape);
    evaluator->bind(func.getArgument(0), s);
    Value result = func.getBody().front().getTerminator()->getOperand(i);
    const ConcreteTensor *t = evaluator->evaluate(result);
    error = evaluator->getError();
    return t;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  ONNXShapeInference inference{&context};
  std::unique_ptr<ONNXEvaluator> evaluator;
};

TEST_F(EvaluatorBoundsTest, SmallShapesEvaluate) {
  std::string error;
  const ConcreteTensor *e = evaluate(0, {2, 3}, error);
  ASSERT_TRUE(e) << error;
  EXPECT_EQ(e->data.size(), 6u);
  const ConcreteTensor *c = evaluate(1, {2, 3}, error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->data.size(), 6u);
}

TEST_F(EvaluatorBoundsTest, HugeExpandIsRefused) {
  // 2^31 x 2^31 = 2^62 elements: once a std::vector of that size.
  std::string error;
  EXPECT_FALSE(evaluate(0, {2147483648.0, 2147483648.0}, error));
  EXPECT_NE(error.find("Expand cannot be evaluated with these inputs"),
            std::string::npos)
      << error;
}

TEST_F(EvaluatorBoundsTest, HugeConstantOfShapeIsRefused) {
  // Each dim within the per-dim bound, the product (2^44) not.
  std::string error;
  EXPECT_FALSE(evaluate(1, {4194304.0, 4194304.0}, error));
  EXPECT_NE(error.find("ConstantOfShape cannot be evaluated with these inputs"),
            std::string::npos)
      << error;
  // A product that overflows int64.
  EXPECT_FALSE(evaluate(1, {4294967296.0, 4294967296.0}, error));
  EXPECT_NE(error.find("ConstantOfShape cannot be evaluated with these inputs"),
            std::string::npos)
      << error;
}

TEST_F(EvaluatorBoundsTest, NumElementsSaturates) {
  ConcreteTensor t;
  t.shape = {int64_t(1) << 32, int64_t(1) << 32};
  EXPECT_EQ(t.getNumElements(), std::numeric_limits<int64_t>::max());
  t.shape = {4, -1};
  EXPECT_EQ(t.getNumElements(), std::numeric_limits<int64_t>::max());
  t.shape = {4, 0};
  EXPECT_EQ(t.getNumElements(), 0);
  ConcreteTensor f = ConcreteTensor::filled(ConcreteTensor::Kind::Int,
                                            {int64_t(1) << 31, 4}, 0);
  EXPECT_TRUE(f.data.empty());
}

} // namespace
