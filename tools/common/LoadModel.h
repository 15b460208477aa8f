//===- LoadModel.h - --model and --speculative-model -----------*- C++ -*-===//
//
// The serving tools take a model as a `.folio` plan (mapped) or as an
// `.onnx` model, which they compile by running `folioc` into a temporary
// plan and mapping that. They never link the compiler: starting one costs
// the runtime's libraries and a page-in of the plan, not loading LLVM and
// MLIR, and an .onnx compiles exactly as `folioc` compiles it.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_COMMON_LOADMODEL_H
#define FOLIO_TOOLS_COMMON_LOADMODEL_H

#include "runtime/Plan/Plan.h"
#include "tools/common/EngineFlags.h"
#include "tools/common/SpeculativeFlags.h"

#include <memory>
#include <string>
#include <vector>

namespace folio::tools {

/// How an `.onnx` model is compiled and a `.folio` plan is checked.
struct ModelLoadOptions {
  /// folioc --kv-cache-dtype; with a plan, `auto` or what it was compiled
  /// with.
  std::string kvCacheDtype = "auto";
  /// folioc --weight-dtype (an .onnx only; a plan runs as stored).
  std::string weightDtype = "f32";
  /// folioc --block-size; 0: folioc's default (an .onnx only).
  int64_t blockSize = 0;
  /// A plan's weights hashed against its checksum (readPlan).
  bool verifyWeights = true;
};

/// The options of `flags` (--kv-cache-dtype, --no-verify-weights).
ModelLoadOptions modelLoadOptions(const EngineFlags &flags);

/// The folioc command line that compiles `onnx` to `output` with
/// `options` (argv[0] is the folioc path).
std::vector<std::string> foliocCommand(const std::string &folioc,
                                       const std::string &onnx,
                                       const std::string &output,
                                       const ModelLoadOptions &options);

/// True for a path that names a compiled plan (`.folio`).
bool isPlanPath(const std::string &path);

/// The directory of the running executable, with its trailing '/'; empty
/// when /proc/self/exe cannot be read. The tools find their siblings
/// (folioc, folio-run) there.
std::string executableDir();

/// The folioc that compiles an .onnx: $FOLIOC when set, else `folioc` next
/// to the running executable. An error says where it looked.
Expected<std::string> findFolioc();

/// --model `path`: a `.folio` plan read (weights mapped, not copied) and
/// checked against `options.kvCacheDtype`, or an `.onnx` model compiled by
/// folioc (its diagnostics become the error; its warnings go to stderr).
/// Any other suffix is an error naming the two accepted.
Expected<plan::Plan> loadOrCompileModel(const std::string &path,
                                        const ModelLoadOptions &options);

/// --model `path`, loaded or compiled with `flags`' options.
Expected<std::shared_ptr<const plan::Plan>>
loadModelPlan(const std::string &path, const EngineFlags &flags);

/// The draft model of `flags` (--speculative-model), loaded or compiled
/// with `options` and the draft's own block size; null when the method
/// takes no model.
Expected<std::shared_ptr<const plan::Plan>>
loadDraftPlan(const SpeculativeFlags &flags, const ModelLoadOptions &options);

} // namespace folio::tools

#endif // FOLIO_TOOLS_COMMON_LOADMODEL_H
