//===- ShapeAnalysis.h - Shape facts kept across passes ---------*- C++ -*-===//
//
// The symbolic shape facts of a function as an MLIR analysis: computed once
// by the first pass that asks (getAnalysis), then handed to the next passes
// as long as each one keeps them true and says so
// (markAnalysesPreserved<ONNXShapeAnalysis>). A pass keeps them true when
// it drops the facts of the ops it erases (eraseDeadOps with the facts) and
// either sets facts for the values it makes or leaves them to the lazy
// lookup, which infers a new folio op's facts from its operands'. A pass
// that does neither (the greedy driver erasing ops behind its back, page-kv
// rebuilding the entry) simply does not preserve it, and the next pass
// recomputes it.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_ONNXOPS_SHAPEANALYSIS_H
#define FOLIO_ONNXOPS_SHAPEANALYSIS_H

#include "compiler/ONNXOps/ShapeInference.h"

#include "mlir/Pass/AnalysisManager.h"

namespace mlir::folio {

class ONNXShapeAnalysis {
public:
  explicit ONNXShapeAnalysis(Operation *op) : inference(op->getContext()) {
    inference.setLazy(true);
    auto func = dyn_cast<func::FuncOp>(op);
    ok = func && mlir::succeeded(inference.run(func));
  }

  /// False when inference failed (its diagnostic was emitted).
  bool succeeded() const { return ok; }
  ONNXShapeInference &get() { return inference; }

  bool isInvalidated(const AnalysisManager::PreservedAnalyses &pa) {
    return !pa.isPreserved<ONNXShapeAnalysis>();
  }

private:
  ONNXShapeInference inference;
  bool ok = false;
};

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_SHAPEANALYSIS_H
