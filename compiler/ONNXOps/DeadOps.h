//===- DeadOps.h - Drop what a rewrite left unused --------------*- C++ -*-===//

#ifndef FOLIO_ONNXOPS_DEADOPS_H
#define FOLIO_ONNXOPS_DEADOPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::folio {

/// Erases side-effect-free ops without uses, last first, so that the
/// subgraphs a pass replaced disappear in one sweep. Every pass that rewrites
/// onnx_node graphs shares this one definition of "dead".
void eraseDeadOps(func::FuncOp func);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_DEADOPS_H
