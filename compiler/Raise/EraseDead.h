//===- EraseDead.h - Drop what a raise left unused --------------*- C++ -*-===//

#ifndef FOLIO_RAISE_ERASEDEAD_H
#define FOLIO_RAISE_ERASEDEAD_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::folio {

/// Erases side-effect-free ops without uses, last first, so that the
/// subgraphs a raise replaced disappear in one sweep.
void eraseDeadOps(func::FuncOp func);

} // namespace mlir::folio

#endif // FOLIO_RAISE_ERASEDEAD_H
