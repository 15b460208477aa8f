//===- FolioOps.h - folio dialect ops ---------------------------*- C++ -*-===//

#ifndef FOLIO_IR_FOLIOOPS_H
#define FOLIO_IR_FOLIOOPS_H

#include "dialects/Folio/IR/FolioDialect.h"
#include "dialects/Folio/IR/FolioTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>
#include <string>

#define GET_OP_CLASSES
#include "dialects/Folio/IR/FolioOps.h.inc"

namespace mlir::folio {
/// The discardable attribute a `folio.onnx_node` the lowering could not
/// handle carries: why, for the message folio-verify-lowered gives.
inline constexpr llvm::StringLiteral kLoweringErrorAttrName =
    "folio.lowering_error";

/// Why `a` and `b` do not broadcast (NumPy rules) to `result`, or nullopt
/// when they do as far as static dims tell.
std::optional<std::string>
checkBroadcast(RankedTensorType a, RankedTensorType b, RankedTensorType result);
} // namespace mlir::folio

#endif // FOLIO_IR_FOLIOOPS_H
