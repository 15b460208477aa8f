//===- LoadModel.h - --model and --speculative-model -----------*- C++ -*-===//
//
// The tools that link the compiler take a model as a `.folio` plan (mapped)
// or an `.onnx` model (compiled in-process); both go through
// mlir::folio::loadOrCompilePlan with the engine flags' KV-cache dtype and
// weight verification.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_COMMON_LOADMODEL_H
#define FOLIO_TOOLS_COMMON_LOADMODEL_H

#include "compiler/Plan/LowerToPlan.h"
#include "tools/common/EngineFlags.h"
#include "tools/common/SpeculativeFlags.h"

#include <memory>
#include <string>

namespace folio::tools {

/// The compile options of `flags` (--kv-cache-dtype, --no-verify-weights).
mlir::folio::CompileToPlanOptions compileOptions(const EngineFlags &flags);

/// --model `path`, loaded or compiled with `flags`' options.
Expected<std::shared_ptr<const plan::Plan>>
loadModelPlan(const std::string &path, const EngineFlags &flags);

/// The draft model of `flags` (--speculative-model), loaded or compiled
/// with `compile`'s options and the draft's own block size; null when the
/// method takes no model.
Expected<std::shared_ptr<const plan::Plan>>
loadDraftPlan(const SpeculativeFlags &flags,
              const mlir::folio::CompileToPlanOptions &compile);

} // namespace folio::tools

#endif // FOLIO_TOOLS_COMMON_LOADMODEL_H
