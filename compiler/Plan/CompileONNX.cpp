//===- CompileONNX.cpp - ONNX file to plan, in-process --------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "compiler/Target/PlanKVCache.h"
#include "compiler/Target/Target.h"
#include "runtime/Plan/PlanIO.h"

#include "compiler/Import/MLIR/ImportONNX.h"
#include "compiler/Import/ONNX/Loader.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration/RegisterAll.h"
#include "dialects/Folio/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace mlir::folio {

llvm::Expected<::folio::plan::Plan>
compileONNXToPlan(const std::string &path,
                  const CompileToPlanOptions &options) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  // Refused before the model is read, not after a whole compile.
  auto weightType = parseWeightDtype(options.weightDtype);
  if (!weightType)
    return weightType.takeError();
  if (llvm::Expected<int64_t> group =
          resolveWeightGroupSize(*weightType, options.weightGroupSize);
      !group)
    return group.takeError();
  std::optional<::folio::plan::ElemType> int4Activations;
  if (!options.int4Activations.empty()) {
    auto parsed = parseInt4Activations(options.int4Activations);
    if (!parsed)
      return parsed.takeError();
    int4Activations = *parsed;
  }
  llvm::Expected<std::unique_ptr<::folio::onnx::Model>> loaded =
      ::folio::onnx::loadModel(path);
  if (!loaded)
    return fail(toString(loaded.takeError()));
  std::shared_ptr<const ::folio::onnx::Model> model = std::move(*loaded);

  DialectRegistry registry;
  registerFolioDialects(registry);
  MLIRContext context(registry);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Warning) {
      if (options.onWarning)
        options.onWarning(diag.str());
      else
        llvm::errs() << "warning: " << diag.str() << "\n";
      return success();
    }
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    if (!diagnostics.empty())
      diagnostics += "\n";
    if (auto name = dyn_cast<NameLoc>(diag.getLocation()))
      diagnostics += name.getName().getValue().str() + ": ";
    diagnostics += diag.str();
    return success();
  });

  OwningOpRef<ModuleOp> module = importONNXModel(context, model, {});
  if (!module)
    return fail(diagnostics.empty() ? "import failed" : diagnostics);
  PassManager pm(&context);
  FolioPipelineOptions pipelineOptions;
  pipelineOptions.target = options.target;
  pipelineOptions.kvCacheDtype = options.kvCacheDtype;
  pipelineOptions.blockSize = options.blockSize;
  pipelineOptions.kvCacheSkipLayers = options.kvCacheSkipLayers;
  pipelineOptions.kvCacheGroupSize = options.kvCacheGroupSize;
  pipelineOptions.kvCacheResidual = options.kvCacheResidual;
  if (!options.kvCalibration.empty())
    setKVCalibration(*module, options.kvCalibrationLayers,
                     options.kvCalibrationHeads, options.kvCalibration);
  buildFolioPipeline(pm, pipelineOptions, FolioPhase::Compile);
  if (failed(pm.run(*module)))
    return fail(diagnostics.empty() ? "compilation failed" : diagnostics);
  // The plan copies every weight out of the model's mapping before the
  // context and model go away.
  std::vector<QuantizedWeightSource> sources;
  llvm::Expected<::folio::plan::Plan> p = lowerModuleToPlan(*module, &sources);
  if (!p || !*weightType)
    return p;
  StoreWeightsOptions store;
  store.type = **weightType;
  store.groupSize = options.weightGroupSize;
  store.sources = &sources;
  store.keepSourceQuantization = options.keepSourceQuantization;
  store.int4Activations = int4Activations;
  store.inputAbsMax = options.inputAbsMax;
  store.shareTiedTables = options.shareTiedTables;
  if (llvm::Error err = storePackedWeights(*p, store))
    return std::move(err);
  return p;
}

void setKVCalibration(ModuleOp module, int64_t layers, int64_t kvHeads,
                      llvm::ArrayRef<float> absMax) {
  auto type = RankedTensorType::get({layers, 2, kvHeads},
                                    Float32Type::get(module.getContext()));
  module->setAttr(kKVCalibrationAttrName, DenseElementsAttr::get(type, absMax));
}

} // namespace mlir::folio

/// A flag asking a compiled .folio for what only compiling decides.
static ::folio::Status fixedAtCompile(const std::string &flag,
                                      const std::string &value,
                                      const std::string &path,
                                      const std::string &plan,
                                      const std::string &what) {
  return ::folio::Status::invalidArgument(
      flag + " " + value + ": '" + path + "' " + plan + "; a plan's " + what +
      " is fixed when it is compiled (recompile with folioc " + flag + "=" +
      value + ", or pass the .onnx model)");
}

std::string mlir::folio::planWeightDType(const ::folio::plan::Plan &plan) {
  // A model's own int4 or int8 weights next to others: "int4+bf16".
  std::string names;
  for (const ::folio::plan::StoredWeight &w : plan.weights) {
    std::string name = weightDtypeName(w.type);
    if (("+" + names + "+").find("+" + name + "+") == std::string::npos)
      names += (names.empty() ? "" : "+") + name;
  }
  return names.empty() ? "none" : names;
}

::folio::Expected<::folio::plan::Plan>
mlir::folio::loadOrCompilePlan(const std::string &path,
                               const CompileToPlanOptions &options) {
  auto endsWith = [&](StringRef suffix) {
    return StringRef(path).ends_with(suffix);
  };
  if (endsWith(".folio")) {
    if (options.inputAbsMax)
      return ::folio::Status::invalidArgument(
          "--calibration-data: '" + path +
          "' is a compiled plan; its int8 outlier columns are fixed when it "
          "is compiled (recompile with folioc --calibration-data, or pass the "
          ".onnx model)");
    ::folio::Expected<::folio::plan::Plan> p = ::folio::plan::readPlan(
        path, ::folio::plan::ReadPlanOptions{options.verifyWeights});
    if (!p)
      return p;
    if (::folio::Status s =
            ::folio::checkPlanKVCacheDType(*p, path, options.kvCacheDtype);
        !s)
      return s;
    if (::folio::Status s =
            ::folio::checkPlanBlockSize(*p, path, options.blockSize);
        !s)
      return s;
    std::string stored = planWeightDType(*p);
    if (options.weightDtype != "none" && stored != options.weightDtype)
      return fixedAtCompile("--weight-dtype", options.weightDtype, path,
                            "stores its weights as " + stored, "weight dtype");
    return p;
  }
  if (!endsWith(".onnx"))
    return ::folio::Status::invalidArgument(
        "--model: '" + path + "' is neither an .onnx nor a .folio file");
  llvm::Expected<::folio::plan::Plan> p = compileONNXToPlan(path, options);
  if (!p)
    return ::folio::Status::invalidArgument(
        "cannot compile '" + path + "': " + llvm::toString(p.takeError()));
  return std::move(*p);
}
