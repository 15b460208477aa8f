//===- Passes.h - Raising token-wise ONNX subgraphs -------------*- C++ -*-===//

#ifndef FOLIO_RAISE_PASSES_H
#define FOLIO_RAISE_PASSES_H

#include "dialects/Folio/IR/FolioDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::folio {

#define GEN_PASS_DECL
#include "compiler/Raise/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Raise/Passes.h.inc"

} // namespace mlir::folio

#endif // FOLIO_RAISE_PASSES_H
