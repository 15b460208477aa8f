//===- Passes.h - compiler passes over imported graphs ----------*- C++ -*-===//
//
// Passes that need the ONNX facts of compiler/ONNXOps (shape inference,
// matchers): configuration, simplification, page-kv. The module attribute
// names and the serving contract they share with the dialect's own passes
// come from dialects/Folio/Transforms/Passes.h.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_TRANSFORMS_PASSES_H
#define FOLIO_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/Folio/Transforms/Passes.h"

namespace mlir::folio {

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace mlir::folio

#endif // FOLIO_COMPILER_TRANSFORMS_PASSES_H
