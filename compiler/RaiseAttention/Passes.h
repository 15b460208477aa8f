//===- Passes.h - Raising rotary and attention subgraphs -------*- C++ -*-===//

#ifndef FOLIO_RAISEATTENTION_PASSES_H
#define FOLIO_RAISEATTENTION_PASSES_H

#include "dialects/Folio/IR/FolioDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::folio {

#define GEN_PASS_DECL
#include "compiler/RaiseAttention/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/RaiseAttention/Passes.h.inc"

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_PASSES_H
