//===- DeadOps.h - Drop what a rewrite left unused --------------*- C++ -*-===//

#ifndef FOLIO_ONNXOPS_DEADOPS_H
#define FOLIO_ONNXOPS_DEADOPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::folio {

class ONNXShapeInference;

/// Erases side-effect-free ops without uses, last first, so that the
/// subgraphs a pass replaced disappear in one sweep. Every pass that rewrites
/// onnx_node graphs shares this one definition of "dead". With `shapes`,
/// the erased results' facts are dropped too (ShapeAnalysis.h).
void eraseDeadOps(func::FuncOp func, ONNXShapeInference *shapes = nullptr);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_DEADOPS_H
