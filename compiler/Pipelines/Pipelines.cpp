//===- Pipelines.cpp - The folio compile pipeline -------------------------===//

#include "Pipelines/Pipelines.h"

#include "Folio/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::folio {

void buildFolioCompilePipeline(OpPassManager &pm,
                               const FolioPipelineOptions &options) {
  FolioSetTargetPassOptions targetOptions;
  targetOptions.target = options.target;
  targetOptions.kvCacheDtype = options.kvCacheDtype;
  targetOptions.blockSize = options.blockSize;
  pm.addPass(createFolioSetTargetPass(targetOptions));
}

void registerFolioPipelines() {
  PassPipelineRegistration<FolioPipelineOptions>(
      "folio-compile",
      "Compiles an imported model to the serving plan for a target",
      buildFolioCompilePipeline);
}

} // namespace mlir::folio
