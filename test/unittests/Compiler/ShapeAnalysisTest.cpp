//===- ShapeAnalysisTest.cpp - Shape facts kept across passes -------------===//
//
// The facts of a function survive a pass that makes new folio ops (their
// facts are inferred on demand from their operands') and erases old ones
// (their facts are dropped), so the next pass can use them without
// running inference again.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/Registration/RegisterAll.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::folio;

namespace {

const char *kModule = R"mlir(
func.func @f(%x: tensor<?x?x8xf32> {folio.dim_names = ["b", "s", ""]},
             %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %n = folio.onnx_node "Neg"(%x) {opset = 17 : i64}
      : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}
)mlir";

/// The folio dialects and kModule parsed; `func` is @f.
class ShapeAnalysisTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registerFolioDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kModule, &context);
    ASSERT_TRUE(module);
    func = module->lookupSymbol<func::FuncOp>("f");
  }

  /// A folio.rms_norm of argument 0, made after inference ran.
  RMSNormOp makeNorm() {
    OpBuilder b(func.getBody().front().getTerminator());
    Value x = func.getArgument(0), g = func.getArgument(1);
    return b.create<RMSNormOp>(func.getLoc(), x.getType(), x, g,
                               b.getF64FloatAttr(1e-6), b.getF64FloatAttr(0.0));
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
};

TEST_F(ShapeAnalysisTest, NewOpsGetFactsAndErasedOpsLoseThem) {
  ONNXShapeAnalysis analysis(func);
  ASSERT_TRUE(analysis.succeeded());
  ONNXShapeInference &shapes = analysis.get();
  const ONNXValueFacts *xf = shapes.lookup(func.getArgument(0));
  ASSERT_TRUE(xf && xf->dims);

  // A pass makes a folio op after inference ran: its facts come from x's.
  RMSNormOp norm = makeNorm();
  const ONNXValueFacts *nf = shapes.lookup(norm.getResult());
  ASSERT_TRUE(nf && nf->dims);
  EXPECT_EQ(*nf->dims, *xf->dims);

  // It erases what it replaced: the facts go with the op.
  Operation *neg = &func.getBody().front().front();
  ASSERT_TRUE(isa<ONNXNodeOp>(neg));
  Value negResult = neg->getResult(0);
  ASSERT_TRUE(shapes.lookup(negResult));
  func.getBody().front().getTerminator()->setOperand(0, norm.getResult());
  size_t before = 0, after = 0;
  func.walk([&](ONNXNodeOp) { ++before; });
  eraseDeadOps(func, &shapes);
  func.walk([&](ONNXNodeOp) { ++after; });
  EXPECT_EQ(before, 1u);
  EXPECT_EQ(after, 0u);
  // The norm's facts stay; the map no longer holds the erased result (a
  // new op reusing its storage must not inherit them).
  EXPECT_TRUE(shapes.lookup(norm.getResult()));
  EXPECT_FALSE(shapes.hasFactsFor(negResult));
}

// Without the lazy mode (the importer's), a value made later has no facts.
TEST_F(ShapeAnalysisTest, PlainInferenceIsNotLazy) {
  ONNXShapeInference shapes(&context);
  ASSERT_TRUE(succeeded(shapes.run(func)));
  RMSNormOp norm = makeNorm();
  EXPECT_EQ(shapes.lookup(norm.getResult()), nullptr);
  shapes.setLazy(true);
  EXPECT_NE(shapes.lookup(norm.getResult()), nullptr);
}

} // namespace
