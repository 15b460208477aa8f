//===- CompileONNX.cpp - ONNX file to plan, in-process --------------------===//

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"

#include "compiler/Import/MLIR/ImportONNX.h"
#include "compiler/Import/ONNX/Loader.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Registration/RegisterAll.h"

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
  buildFolioPipeline(pm, pipelineOptions, FolioPhase::Compile);
  if (failed(pm.run(*module)))
    return fail(diagnostics.empty() ? "compilation failed" : diagnostics);
  // The plan copies every weight out of the model's mapping before the
  // context and model go away.
  return lowerModuleToPlan(*module);
}

} // namespace mlir::folio

::folio::Expected<::folio::plan::Plan>
mlir::folio::loadOrCompilePlan(const std::string &path,
                               const CompileToPlanOptions &options) {
  auto endsWith = [&](StringRef suffix) {
    return StringRef(path).ends_with(suffix);
  };
  if (endsWith(".folio"))
    return ::folio::plan::readPlan(path);
  if (!endsWith(".onnx"))
    return ::folio::Status::invalidArgument(
        "--model: '" + path + "' is neither an .onnx nor a .folio file");
  llvm::Expected<::folio::plan::Plan> p = compileONNXToPlan(path, options);
  if (!p)
    return ::folio::Status::invalidArgument(
        "cannot compile '" + path + "': " + llvm::toString(p.takeError()));
  return std::move(*p);
}
