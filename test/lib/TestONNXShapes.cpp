//===- TestONNXShapes.cpp - Print symbolic shape inference results --------===//
//
// Annotates every folio.onnx_node with what ONNXShapeInference derived: its
// results' dims (`folio.test.dims`) and tracked integer values
// (`folio.test.values`), spelt with the dim names, so lit tests can check
// the inference rules op by op.
//
//===----------------------------------------------------------------------===//

#include "compiler/ONNXOps/ShapeInference.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::folio;

namespace {

std::string formatList(ONNXShapeInference &inference,
                       ArrayRef<AffineExpr> exprs) {
  std::string out = "[";
  for (auto [i, expr] : llvm::enumerate(exprs))
    out += (i ? ", " : "") + inference.describe(expr);
  return out + "]";
}

struct TestONNXShapesPass
    : PassWrapper<TestONNXShapesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestONNXShapesPass)

  StringRef getArgument() const final { return "folio-test-onnx-shapes"; }
  StringRef getDescription() const final {
    return "Annotates folio.onnx_node ops with inferred symbolic shapes";
  }

  void runOnOperation() override {
    ONNXShapeInference inference(&getContext());
    if (failed(inference.run(getOperation())))
      return signalPassFailure();
    Builder b(&getContext());
    getOperation().walk([&](ONNXNodeOp node) {
      SmallVector<Attribute> dims, values;
      for (Value result : node.getResults()) {
        const ONNXValueFacts *facts = inference.lookup(result);
        dims.push_back(b.getStringAttr(
            facts->dims ? formatList(inference, *facts->dims) : "unranked"));
        if (facts->ints)
          values.push_back(
              b.getStringAttr(formatList(inference, *facts->ints)));
        else if (facts->floats) {
          std::string text = "[";
          for (auto [i, v] : llvm::enumerate(*facts->floats))
            text += (i ? ", " : "") + std::to_string(v);
          values.push_back(b.getStringAttr(text + "]"));
        } else {
          values.push_back(b.getStringAttr("?"));
        }
      }
      node->setAttr("folio.test.dims", b.getArrayAttr(dims));
      node->setAttr("folio.test.values", b.getArrayAttr(values));
    });
  }
};

} // namespace

namespace mlir::folio::test {
void registerTestONNXShapesPass() { PassRegistration<TestONNXShapesPass>(); }
} // namespace mlir::folio::test
