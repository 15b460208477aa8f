//===- folioc.cpp - The Folio compiler driver
//------------------------------===//
//
// folioc model.onnx [--stop-after=import] [--target=…] [-o out.mlir]
//
// Loads and validates the ONNX model, imports it into the folio dialect and
// runs the compile pipeline. Every failure is reported as one message that
// names the node or field at fault, with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration/RegisterAll.h"

#include "compiler/Import/MLIR/ImportONNX.h"
#include "compiler/Import/ONNX/Loader.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace llvm;

namespace {

cl::OptionCategory folioCategory("folioc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"),
                               cl::Required, cl::cat(folioCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' = stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(folioCategory));

enum class Emit { MLIR, Bytecode, Plan };
cl::opt<Emit> emit("emit", cl::desc("What to write"), cl::init(Emit::MLIR),
                   cl::values(clEnumValN(Emit::MLIR, "mlir",
                                         "MLIR text of the compiled module"),
                              clEnumValN(Emit::Bytecode, "mlirbc",
                                         "MLIR bytecode of the same"),
                              clEnumValN(Emit::Plan, "plan",
                                         "the runtime plan (.folio; the "
                                         "default for -o *.folio)")),
                   cl::cat(folioCategory));

/// `--stop-after` is parsed by hand: libLLVM already registers a
/// `-stop-after` option (for its codegen passes), and two cl::opts with one
/// name abort at start-up.
constexpr StringLiteral kStopAfterHelp =
    "  --stop-after=<phase>   stop after a phase and write its IR:\n"
    "                         import   ONNX nodes as folio.onnx_node, typed "
    "by symbolic shape inference\n"
    "                         raise    norms, rotary, attention, linears as "
    "folio ops (batch x seq layout)\n"
    "                         page-kv  the serving entry: forward(tokens, ..., "
    "caches) -> logits\n"
    "                         lower    every op a folio op, shapes static "
    "but the token count\n"
    "                         fuse     the ops grouped into folio.kernel "
    "regions (= compile)\n"
    "                         compile  the whole pipeline (default)\n";

/// Removes `--stop-after=X` / `--stop-after X` from argv; nullopt (after a
/// message) on a bad value.
std::optional<mlir::folio::FolioPhase> takeStopAfter(int &argc, char **argv) {
  mlir::folio::FolioPhase phase = mlir::folio::FolioPhase::Compile;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    StringRef value;
    if (arg.consume_front("--stop-after=") ||
        arg.consume_front("-stop-after=")) {
      value = arg;
    } else if (arg == "--stop-after" || arg == "-stop-after") {
      if (i + 1 == argc) {
        errs() << "folioc: error: --stop-after needs a phase (import, raise, "
                  "page-kv, lower, fuse, compile)\n";
        return std::nullopt;
      }
      value = argv[++i];
    } else {
      argv[out++] = argv[i];
      continue;
    }
    std::optional<mlir::folio::FolioPhase> parsed =
        mlir::folio::parseFolioPhase(value);
    if (!parsed) {
      errs() << "folioc: error: unknown phase '" << value
             << "' for --stop-after; supported: import, raise, page-kv, "
                "lower, fuse, compile\n";
      return std::nullopt;
    }
    phase = *parsed;
  }
  argc = out;
  return phase;
}

cl::opt<std::string> target("target",
                            cl::desc("Target: cpu, sm_80, sm_86, sm_89, "
                                     "sm_90a"),
                            cl::init("cpu"), cl::cat(folioCategory));
cl::opt<std::string>
    kvCacheDtype("kv-cache-dtype",
                 cl::desc("KV-cache dtype: auto (fp8_e4m3 on sm_89/sm_90a, "
                          "int8 elsewhere), f32, f16, bf16, fp8_e4m3, "
                          "fp8_e5m2, int8, int4, int2"),
                 cl::init("auto"), cl::cat(folioCategory));
cl::opt<int64_t> blockSize("block-size",
                           cl::desc("KV-cache block size in tokens (power of "
                                    "two, 1..256)"),
                           cl::init(16), cl::cat(folioCategory));
cl::opt<bool> dumpImport("dump-import",
                         cl::desc("Also print the imported IR to stderr "
                                  "(the pipeline's IR: "
                                  "--mlir-print-ir-after-all)"),
                         cl::init(false), cl::cat(folioCategory));

enum class ProgressMode { Auto, Always, Never };
cl::opt<ProgressMode>
    progress("progress", cl::desc("Progress display on stderr"),
             cl::init(ProgressMode::Auto),
             cl::values(clEnumValN(ProgressMode::Auto, "auto",
                                   "when stderr is a terminal"),
                        clEnumValN(ProgressMode::Always, "always", "always"),
                        clEnumValN(ProgressMode::Never, "never", "never")),
             cl::cat(folioCategory));

/// Prints "folioc: error: <node>: <message>" for each diagnostic, naming the
/// node from the importer's NameLoc rather than a meaningless file:0:0.
void printDiagnostic(Diagnostic &diag) {
  raw_ostream &os = errs();
  os << "folioc: ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  Location loc = diag.getLocation();
  if (auto name = dyn_cast<NameLoc>(loc))
    os << name.getName().getValue() << ": ";
  else if (auto file = dyn_cast<FileLineColLoc>(loc); file && file.getLine())
    os << file.getFilename().getValue() << ":" << file.getLine() << ": ";
  os << diag << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note);
}

class Progress {
public:
  explicit Progress(bool enabled) : enabled(enabled) {}
  void update(StringRef phase, size_t done, size_t total) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    if (done != total && now - last < std::chrono::milliseconds(100))
      return;
    last = now;
    errs() << "\r" << phase << ": " << done << "/" << total << " nodes";
    if (done == total)
      errs() << "\n";
  }
  void phase(StringRef name) {
    if (enabled)
      errs() << name << "\n";
  }

private:
  bool enabled;
  std::chrono::steady_clock::time_point last;
};

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  std::optional<mlir::folio::FolioPhase> stopAfter = takeStopAfter(argc, argv);
  if (!stopAfter)
    return 1;
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // libLLVM registers hundreds of codegen options in the general category;
  // --help shows folioc's own and the few MLIR ones that matter here.
  StringMap<cl::Option *> &registered = cl::getRegisteredOptions();
  for (StringRef name :
       {"mlir-print-ir-after-all", "mlir-print-ir-before-all",
        "mlir-print-ir-after", "mlir-print-ir-before", "mlir-timing",
        "mlir-elide-resource-strings-if-larger",
        "mlir-elide-elementsattrs-if-larger", "mlir-print-debuginfo"})
    if (auto it = registered.find(name); it != registered.end())
      it->second->addCategory(folioCategory);
  cl::HideUnrelatedOptions(folioCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      (Twine("folioc: compiles a decoder-only model exported to ONNX\n\n"
             "  folioc model.onnx --stop-after=import -o model.mlir\n"
             "  folioc model.onnx --target=sm_90a --kv-cache-dtype=auto\n\n") +
       kStopAfterHelp)
          .str());

  bool showProgress = progress == ProgressMode::Always ||
                      (progress == ProgressMode::Auto &&
                       sys::Process::StandardErrIsDisplayed());
  Progress display(showProgress);

  DialectRegistry registry;
  mlir::folio::registerFolioDialects(registry);
  MLIRContext context(registry);
  ScopedDiagnosticHandler handler(&context, [](Diagnostic &diag) {
    printDiagnostic(diag);
    return success();
  });

  display.phase("load: " + inputPath);
  Expected<std::unique_ptr<::folio::onnx::Model>> loaded =
      ::folio::onnx::loadModel(inputPath);
  if (!loaded) {
    errs() << "folioc: error: " << toString(loaded.takeError()) << "\n";
    return 1;
  }
  std::shared_ptr<const ::folio::onnx::Model> model = std::move(*loaded);

  mlir::folio::ONNXImportOptions importOptions;
  importOptions.progress = [&](size_t done, size_t total) {
    display.update("import", done, total);
  };
  OwningOpRef<ModuleOp> module =
      mlir::folio::importONNXModel(context, model, importOptions);
  if (!module)
    return 1;
  if (dumpImport)
    module->print(errs());

  if (*stopAfter != mlir::folio::FolioPhase::Import) {
    display.phase("compile: target " + target);
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    DefaultTimingManager timing;
    applyDefaultTimingManagerCLOptions(timing);
    TimingScope timingScope = timing.getRootScope();
    pm.enableTiming(timingScope);
    mlir::folio::FolioPipelineOptions pipelineOptions;
    pipelineOptions.target = target.getValue();
    pipelineOptions.kvCacheDtype = kvCacheDtype.getValue();
    pipelineOptions.blockSize = blockSize.getValue();
    mlir::folio::buildFolioPipeline(pm, pipelineOptions, *stopAfter);
    if (failed(pm.run(*module)))
      return 1;
  }

  // A plan goes to its file directly: writePlan writes atomically, and the
  // artifact is binary, never stdout.
  if (emit == Emit::Plan || StringRef(outputPath).ends_with(".folio")) {
    if (outputPath == "-") {
      errs() << "folioc: error: --emit=plan needs -o <file.folio>\n";
      return 1;
    }
    llvm::Expected<::folio::plan::Plan> plan =
        mlir::folio::lowerModuleToPlan(*module);
    if (!plan) {
      errs() << "folioc: error: " << toString(plan.takeError()) << "\n";
      return 1;
    }
    if (::folio::Status s = ::folio::plan::writePlan(*plan, outputPath); !s) {
      errs() << "folioc: error: " << s.message() << "\n";
      return 1;
    }
    return 0;
  }

  std::string error;
  std::unique_ptr<ToolOutputFile> output = openOutputFile(outputPath, &error);
  if (!output) {
    errs() << "folioc: error: cannot write '" << outputPath << "': " << error
           << "\n";
    return 1;
  }
  if (emit == Emit::Bytecode) {
    if (failed(writeBytecodeToFile(*module, output->os())))
      return 1;
  } else {
    module->print(output->os());
  }
  output->keep();
  return 0;
}
