//===- Pipelines.cpp - The folio compile pipeline -------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Raise/Passes.h"
#include "compiler/RaiseAttention/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::folio {

std::optional<FolioPhase> parseFolioPhase(StringRef name) {
  return llvm::StringSwitch<std::optional<FolioPhase>>(name)
      .Case("import", FolioPhase::Import)
      .Case("raise", FolioPhase::Raise)
      .Case("page-kv", FolioPhase::PageKV)
      .Case("lower", FolioPhase::Lower)
      .Case("fuse", FolioPhase::Fuse)
      .Case("compile", FolioPhase::Compile)
      .Default(std::nullopt);
}

void buildFolioPipeline(OpPassManager &pm, const FolioPipelineOptions &options,
                        FolioPhase stopAfter) {
  if (stopAfter == FolioPhase::Import)
    return;
  // f32 values first: every later pass and kernel computes in f32.
  pm.addPass(createFolioWidenFloatsPass());
  // The configuration first: page-kv reads the block size from the module.
  FolioSetTargetPassOptions targetOptions;
  targetOptions.target = options.target;
  targetOptions.kvCacheDtype = options.kvCacheDtype;
  targetOptions.blockSize = options.blockSize;
  pm.addPass(createFolioSetTargetPass(targetOptions));

  // Raise: shape bookkeeping folded away, then the patterns from the most
  // specific inward (rotary feeds attention; attention's projections are
  // plain linears once it is raised).
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createFolioONNXSimplifyPass());
  func.addPass(createFolioRaiseNormsPass());
  func.addPass(createFolioRaiseRotaryPass());
  func.addPass(createFolioRaiseAttentionPass());
  func.addPass(createFolioRaiseLinearPass());
  func.addPass(createFolioONNXSimplifyPass());
  if (stopAfter == FolioPhase::Raise)
    return;

  pm.addPass(createFolioPageKVPass());
  // page-kv's layout moves around attention cancel the model's own, and
  // rotary no longer needs its own.
  OpPassManager &served = pm.nest<func::FuncOp>();
  served.addPass(createFolioONNXSimplifyPass());
  served.addPass(createFolioFoldRotaryTransposesPass());
  pm.addPass(createFolioVerifyServingContractPass());
  // The caches take the configured dtype as soon as they exist, so
  // `--stop-after=page-kv` shows what the plan will allocate.
  SmallVector<int64_t> skipLayers(options.kvCacheSkipLayers.begin(),
                                  options.kvCacheSkipLayers.end());
  FolioQuantizeKVPassOptions quantizeOptions;
  quantizeOptions.skipLayers = skipLayers;
  quantizeOptions.groupSize = options.kvCacheGroupSize;
  quantizeOptions.residual = options.kvCacheResidual;
  pm.addPass(createFolioQuantizeKVPass(quantizeOptions));
  if (stopAfter == FolioPhase::PageKV)
    return;

  // Lower: the rest of the model to folio ops with static shapes; nothing
  // of ONNX or upstream tensor ops reaches the plan.
  OpPassManager &lowered = pm.nest<func::FuncOp>();
  lowered.addPass(createFolioLowerONNXPass());
  // One widening cast of `positions` per rotary becomes one per model.
  lowered.addPass(createCSEPass());
  // Graph rewrites the executor used to make at load time.
  lowered.addPass(createFolioFoldUnitTransposesPass());
  lowered.addPass(createFolioFoldEmbeddingOffsetsPass());
  lowered.addPass(createFolioSinkGatherRowsPass());
  lowered.addPass(createFolioStackSiblingLinearsPass());
  pm.addPass(createFolioVerifyLoweredPass());
  if (stopAfter == FolioPhase::Lower)
    return;

  // The verify entries of speculative decoding, next to forward; fuse makes
  // their spec_verify a kernel of its own.
  pm.addPass(createFolioSpeculativePass());
  // Fuse: kernel boundaries for every backend; the plan is a list of them.
  pm.nest<func::FuncOp>().addPass(createFolioFusePass());
}

void buildFolioCompilePipeline(OpPassManager &pm,
                               const FolioPipelineOptions &options) {
  buildFolioPipeline(pm, options, FolioPhase::Compile);
}

void registerFolioPipelines() {
  PassPipelineRegistration<FolioPipelineOptions>(
      "folio-compile",
      "Compiles an imported model to the serving entry for a target",
      buildFolioCompilePipeline);
}

} // namespace mlir::folio
