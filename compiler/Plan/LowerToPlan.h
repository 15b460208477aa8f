//===- LowerToPlan.h - The serving entry as a plan --------------*- C++ -*-===//
//
// Turns the compiled module's `forward` function into a runtime plan: one
// step per op in program order, one value slot per SSA value, every
// constant's bytes (dense attributes and the model's dense_resource weights)
// copied once into the plan's aligned blob.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_PLAN_LOWERTOPLAN_H
#define FOLIO_COMPILER_PLAN_LOWERTOPLAN_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::folio {

/// Lowers `module`'s serving entry (after page-kv). Errors name the op that
/// cannot be represented (an unsupported element type, a region op).
llvm::Expected<::folio::plan::Plan> lowerModuleToPlan(ModuleOp module);

struct CompileToPlanOptions {
  std::string target = "cpu";
  std::string kvCacheDtype = "f32";
  int64_t blockSize = 16;
};

/// Loads, imports and compiles an ONNX model, then lowers it: what
/// `folio-run --model x.onnx` does in-process. Diagnostics are collected
/// into the error's message.
llvm::Expected<::folio::plan::Plan>
compileONNXToPlan(const std::string &path, const CompileToPlanOptions &options);

/// What the tools take as --model: a `.folio` plan, read (weights mapped,
/// not copied), or an `.onnx` model, compiled in-process. Errors name the
/// file and say which suffixes are accepted.
::folio::Expected<::folio::plan::Plan>
loadOrCompilePlan(const std::string &path, const CompileToPlanOptions &options);

} // namespace mlir::folio

#endif // FOLIO_COMPILER_PLAN_LOWERTOPLAN_H
