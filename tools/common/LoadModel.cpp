//===- LoadModel.cpp - --model and --speculative-model --------------------===//

#include "tools/common/LoadModel.h"

namespace folio::tools {

mlir::folio::CompileToPlanOptions compileOptions(const EngineFlags &flags) {
  mlir::folio::CompileToPlanOptions options;
  options.kvCacheDtype = flags.kvCacheDtype;
  options.verifyWeights = flags.verifyWeights;
  return options;
}

Expected<std::shared_ptr<const plan::Plan>>
loadModelPlan(const std::string &path, const EngineFlags &flags) {
  Expected<plan::Plan> loaded =
      mlir::folio::loadOrCompilePlan(path, compileOptions(flags));
  if (!loaded)
    return loaded.status();
  return std::make_shared<const plan::Plan>(std::move(*loaded));
}

Expected<std::shared_ptr<const plan::Plan>>
loadDraftPlan(const SpeculativeFlags &flags,
              const mlir::folio::CompileToPlanOptions &compile) {
  if (flags.method != "draft")
    return std::shared_ptr<const plan::Plan>();
  mlir::folio::CompileToPlanOptions draftOptions = compile;
  draftOptions.blockSize = 0; // the draft's own default
  Expected<plan::Plan> loaded =
      mlir::folio::loadOrCompilePlan(flags.model, draftOptions);
  if (!loaded)
    return Status::invalidArgument("--speculative-model " + flags.model + ": " +
                                   loaded.status().message());
  return std::make_shared<const plan::Plan>(std::move(*loaded));
}

} // namespace folio::tools
