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

#include "codegen/CUDA/KernelSpec.h"
#include "compiler/Import/MLIR/ImportONNX.h"
#include "compiler/Import/ONNX/Loader.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Plan/CudaKernels.h"
#include "compiler/Plan/LowerToPlan.h"
#include "compiler/Plan/StoreWeights.h"
#include "compiler/Target/Target.h"
#include "runtime/Core/KVCalibration.h"
#include "runtime/Plan/PlanIO.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/folioc/EmitBinary.h"
#include "tools/folioc/EmitCuda.h"

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
#include <memory>

using namespace mlir;
using namespace llvm;

namespace {

cl::OptionCategory folioCategory("folioc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"),
                               cl::Required, cl::cat(folioCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' = stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(folioCategory));

enum class Emit { MLIR, Bytecode, Plan, Binary, Cuda };
cl::opt<Emit> emit("emit", cl::desc("What to write"), cl::init(Emit::MLIR),
                   cl::values(clEnumValN(Emit::MLIR, "mlir",
                                         "MLIR text of the compiled module"),
                              clEnumValN(Emit::Bytecode, "mlirbc",
                                         "MLIR bytecode of the same"),
                              clEnumValN(Emit::Plan, "plan",
                                         "the runtime plan (.folio; the "
                                         "default for -o *.folio)"),
                              clEnumValN(Emit::Binary, "binary",
                                         "one executable that serves the "
                                         "model: the serving runtime with "
                                         "plan, weights and --tokenizer "
                                         "embedded"),
                              clEnumValN(Emit::Cuda, "cuda",
                                         "the model's generated CUDA "
                                         "kernels, one self-contained .cu "
                                         "file each, into the -o directory "
                                         "(needs a GPU --target)")),
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
  bool given = false;
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
    if (given) {
      errs() << "folioc: error: --stop-after is given twice\n";
      return std::nullopt;
    }
    given = true;
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
cl::opt<bool> noKernelCache(
    "no-kernel-cache",
    cl::desc("With a GPU --target and a plan output (.folio, "
             "--emit=binary): compile every CUDA "
             "kernel with NVRTC, neither reading nor writing the kernel "
             "cache"),
    cl::init(false), cl::cat(folioCategory));
cl::opt<std::string> kernelCacheDir(
    "kernel-cache-dir",
    cl::desc("The kernel cache's directory (default: $FOLIO_CACHE_DIR/kernels, "
             "$XDG_CACHE_HOME/folio/kernels or ~/.cache/folio/kernels)"),
    cl::init(""), cl::cat(folioCategory));
cl::opt<std::string>
    kvCacheDtype("kv-cache-dtype",
                 cl::desc("KV-cache dtype: auto (fp8_e4m3 on sm_89/sm_90a, "
                          "int8 elsewhere), f32, f16, bf16, fp8_e4m3, "
                          "fp8_e5m2, int8, int4, int2"),
                 cl::init("auto"), cl::cat(folioCategory));
cl::list<int64_t> kvCacheSkipLayers(
    "kv-cache-dtype-skip-layers", cl::CommaSeparated,
    cl::desc("Layers whose KV cache stays at 16 bits (bf16) when the cache "
             "is quantized, e.g. 0,5"),
    cl::cat(folioCategory));
cl::opt<int64_t>
    kvCacheGroupSize("kv-cache-group-size",
                     cl::desc("int4 KV caches, and int2 values: elements "
                              "per scale group along head_dim (default: the "
                              "largest even divisor of head_dim up to 32)"),
                     cl::init(0), cl::cat(folioCategory));
cl::opt<int64_t> kvCacheResidual(
    "kv-cache-residual",
    cl::desc("int2 (KIVI) KV caches: the newest tokens of each sequence kept "
             "in full precision, a multiple of --block-size (default: 128 "
             "rounded up to one)"),
    cl::init(0), cl::cat(folioCategory));
cl::opt<std::string> weightDtype(
    "weight-dtype",
    cl::desc("How plans store linear weights, packed for the kernels: f32, "
             "bf16, f16, int8 (per-output-channel scales, outlier columns "
             "in bf16), fp8_e4m3 (per-output-channel scales) or int4 "
             "(groups along K with an f16 scale and min each; "
             "--weight-group-size). Default: bf16, and weights the model "
             "stores quantized (MatMulNBits, DequantizeLinear) kept as its "
             "int4 or int8 codes where the kernels take them exactly; f16 "
             "for a model exported in f16"),
    cl::init("bf16"), cl::cat(folioCategory));
cl::opt<int64_t> weightGroupSize(
    "weight-group-size",
    cl::desc("--weight-dtype int4: weights per group along K, 32, 64 or 128 "
             "(default 128); where the in features are not a multiple of "
             "it, each row's last group is shorter"),
    cl::init(0), cl::cat(folioCategory));
cl::opt<std::string> int4Activations(
    "int4-activations",
    cl::desc("int4 weights: what their linears may round the input to. "
             "int8: per weight group, so that AVX2 and AVX-512 CPUs "
             "multiply the codes as integers (docs/cpu-kernels.md gives "
             "the speed and the error); f32: never. Default: "
             "int8 with --weight-dtype int4 and for a model's MatMulNBits "
             "with accuracy_level 4, f32 for its other int4 codes kept "
             "without --weight-dtype (their ONNX form computes in float)"),
    cl::cat(folioCategory));
cl::opt<std::string> calibrationData(
    "calibration-data",
    cl::desc("Run the model on this file at compile time: fp8 KV caches "
             "store calibrated per-head scales, and --weight-dtype int8 "
             "keeps the input columns whose values stand far out of the "
             "others in bf16. Token ids (.i32, int32 little-endian) or text "
             "(needs --tokenizer)"),
    cl::value_desc("file"), cl::cat(folioCategory));
cl::opt<std::string> tokenizerPath("tokenizer",
                                   cl::desc("tokenizer.json that encodes text "
                                            "--calibration-data; embedded by "
                                            "--emit=binary"),
                                   cl::value_desc("file"),
                                   cl::cat(folioCategory));
cl::opt<std::string> runtimeStub(
    "runtime-stub",
    cl::desc("--emit=binary: the serving runtime to embed the model in "
             "(default: folio-model-stub next to folioc)"),
    cl::value_desc("file"), cl::cat(folioCategory));
cl::opt<int64_t> blockSize("block-size",
                           cl::desc("KV-cache block size in tokens (power of "
                                    "two, 1..256; default 16, or 32 for "
                                    "int2 caches)"),
                           cl::init(0), cl::cat(folioCategory));
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

/// Whether the plan stores its linear weights int8 (asked for: the default,
/// bf16, keeps a model's own int8 codes, which need no calibration).
bool int8Weights() { return weightDtype == "int8"; }

/// --calibration-data's record of the int8 weights' inputs, for lowerToPlan
/// (set by calibrate with --weight-dtype int8).
std::optional<::folio::core::LinearInputCalibration> inputCalibration;

/// The cache dtype this compile makes (`auto` resolved for --target); none
/// when --target or --kv-cache-dtype is not a valid value.
std::optional<::folio::KVCacheDType> resolvedKVCacheDType() {
  std::optional<::folio::Target> t = ::folio::parseTarget(target);
  std::optional<::folio::KVCacheDType> d =
      ::folio::parseKVCacheDType(kvCacheDtype);
  if (!t || !d)
    return std::nullopt;
  return ::folio::resolveKVCacheDType(*t, *d);
}

/// Whether `d` is an fp8 cache (static scales, which calibration sets).
bool isFp8(::folio::KVCacheDType d) {
  return d == ::folio::KVCacheDType::FP8E4M3 ||
         d == ::folio::KVCacheDType::FP8E5M2;
}

/// The KV flags that only mean something for some cache dtypes are refused
/// for the others rather than ignored.
LogicalResult checkKVOptions() {
  std::optional<::folio::KVCacheDType> maybe = resolvedKVCacheDType();
  if (!maybe)
    return success(); // folio-set-target names the bad value
  ::folio::KVCacheDType resolved = *maybe;
  std::string name(::folio::kvCacheDTypeName(resolved));
  auto refuse = [&](StringRef flag, const Twine &why) {
    errs() << "folioc: error: " << flag << " " << why
           << "; the KV cache dtype here is " << name << "\n";
    return failure();
  };
  bool fp8 = isFp8(resolved);
  bool quantized = ::folio::kvCacheDTypeBits(resolved) < 16;
  if (!kvCacheSkipLayers.empty() && !quantized)
    return refuse("--kv-cache-dtype-skip-layers",
                  "keeps layers of a quantized cache at 16 bits");
  for (size_t i = 0; i < kvCacheSkipLayers.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (kvCacheSkipLayers[i] == kvCacheSkipLayers[j]) {
        errs() << "folioc: error: --kv-cache-dtype-skip-layers lists layer "
               << kvCacheSkipLayers[i] << " twice\n";
        return failure();
      }
  if (kvCacheGroupSize.getNumOccurrences() &&
      resolved != ::folio::KVCacheDType::Int4 &&
      resolved != ::folio::KVCacheDType::Int2)
    return refuse("--kv-cache-group-size", "applies to int4 and int2 caches "
                                           "only");
  if (kvCacheResidual.getNumOccurrences() &&
      resolved != ::folio::KVCacheDType::Int2)
    return refuse("--kv-cache-residual", "applies to int2 (KIVI) caches only");
  if (!calibrationData.empty() && !fp8 && !int8Weights())
    return refuse("--calibration-data",
                  "sets the static scales of fp8 caches (int8 and int4 "
                  "compute theirs when a token is written) and the outlier "
                  "columns of --weight-dtype int8, and this compile has "
                  "neither (weights " +
                      weightDtype.getValue() + ")");
  return success();
}

/// --weight-dtype, parsed before anything loads; it shapes plans only.
std::optional<std::optional<::folio::plan::ElemType>> checkWeightOptions() {
  auto parsed = mlir::folio::parseWeightDtype(weightDtype);
  if (!parsed) {
    errs() << "folioc: error: " << toString(parsed.takeError()) << "\n";
    return std::nullopt;
  }
  if (weightGroupSize.getNumOccurrences() && weightGroupSize <= 0) {
    errs() << "folioc: error: --weight-group-size " << weightGroupSize
           << " is not an int4 group size; supported: 32, 64, 128\n";
    return std::nullopt;
  }
  if (auto group =
          mlir::folio::resolveWeightGroupSize(*parsed, weightGroupSize);
      !group) {
    errs() << "folioc: error: " << toString(group.takeError()) << "\n";
    return std::nullopt;
  }
  // --emit=cuda generates the linear kernels for the stored form.
  bool plan = emit == Emit::Plan || emit == Emit::Binary ||
              emit == Emit::Cuda || StringRef(outputPath).ends_with(".folio");
  if (weightDtype.getNumOccurrences() && !plan) {
    errs() << "folioc: error: --weight-dtype sets how a plan stores its "
              "weights; it applies to --emit=plan (or a .folio output), "
              "--emit=binary and --emit=cuda, not to IR output\n";
    return std::nullopt;
  }
  if (int4Activations.getNumOccurrences()) {
    if (auto a = mlir::folio::parseInt4Activations(int4Activations); !a) {
      errs() << "folioc: error: " << toString(a.takeError()) << "\n";
      return std::nullopt;
    }
    if (!plan) {
      errs() << "folioc: error: --int4-activations is stored with a plan's "
                "int4 weights; it applies to --emit=plan (or a .folio "
                "output), --emit=binary and --emit=cuda, not to IR output\n";
      return std::nullopt;
    }
    if (weightDtype.getNumOccurrences() && *parsed &&
        **parsed != ::folio::plan::ElemType::I4) {
      errs() << "folioc: error: --int4-activations applies to int4 weights; "
                "--weight-dtype is "
             << weightDtype << "\n";
      return std::nullopt;
    }
  }
  return *parsed;
}

/// Lowers the compiled module to a plan with its weights stored as
/// --weight-dtype asks.
llvm::Expected<::folio::plan::Plan>
lowerToPlan(ModuleOp module, std::optional<::folio::plan::ElemType> weights) {
  std::vector<mlir::folio::QuantizedWeightSource> sources;
  llvm::Expected<::folio::plan::Plan> plan =
      mlir::folio::lowerModuleToPlan(module, &sources);
  if (!plan)
    return plan;
  // --int4-activations is refused for a plan without int4 weights, after
  // storing (without --weight-dtype a model's own int4 codes may be kept).
  auto checkInt4 = [&]() -> llvm::Error {
    if (!int4Activations.getNumOccurrences() ||
        llvm::any_of(plan->weights, [](const ::folio::plan::StoredWeight &w) {
          return w.type == ::folio::plan::ElemType::I4;
        }))
      return llvm::Error::success();
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--int4-activations applies to int4 weights, and this plan stores "
        "none (--weight-dtype " +
            weightDtype.getValue() + ")");
  };
  if (!weights) {
    if (llvm::Error err = checkInt4())
      return std::move(err);
    return plan;
  }
  mlir::folio::StoreWeightsOptions options;
  options.type = *weights;
  // A model exported in f16 keeps its weights' every value in f16, which
  // the default bf16 would round.
  if (!weightDtype.getNumOccurrences())
    if (auto source = module->getAttrOfType<StringAttr>(
            mlir::folio::kSourceFloatAttrName);
        source && source.getValue() == "f16")
      options.type = ::folio::plan::ElemType::F16;
  options.groupSize = weightGroupSize;
  options.sources = &sources;
  // Without --weight-dtype, weights the model brought quantized keep their
  // own form where the kernels take it.
  options.keepSourceQuantization = !weightDtype.getNumOccurrences();
  if (int4Activations.getNumOccurrences())
    options.int4Activations =
        cantFail(mlir::folio::parseInt4Activations(int4Activations));
  if (inputCalibration)
    options.inputAbsMax = &inputCalibration->absMax;
  if (llvm::Error err = mlir::folio::storePackedWeights(*plan, options))
    return std::move(err);
  if (llvm::Error err = checkInt4())
    return std::move(err);
  if (inputCalibration) {
    int64_t columns = 0, weights = 0;
    int64_t linears = 0;
    for (const ::folio::plan::StoredWeight &w : plan->weights) {
      // A tied table's lookup shares its lm_head's columns.
      if (plan->steps[size_t(w.step)].kind == "embedding")
        continue;
      ++linears;
      if (w.numOutliers > 0) {
        columns += w.numOutliers;
        ++weights;
      }
    }
    errs() << "folioc: calibrated int8 weights on " << inputCalibration->tokens
           << " tokens: " << columns << " outlier columns in " << weights
           << " of " << linears << " weights\n";
  }
  return plan;
}

/// --emit=binary and the flags that only it (or calibration) uses, checked
/// before anything loads.
LogicalResult checkEmitOptions(mlir::folio::FolioPhase stopAfter) {
  auto refuse = [](StringRef message) {
    errs() << "folioc: error: " << message << "\n";
    return failure();
  };
  if (emit != Emit::Binary) {
    if (!runtimeStub.empty())
      return refuse("--runtime-stub only applies to --emit=binary");
    if (!tokenizerPath.empty() && calibrationData.empty())
      return refuse("--tokenizer is used by --calibration-data (to encode "
                    "text) and --emit=binary (embedded), and neither was "
                    "given");
    return success();
  }
  if (tokenizerPath.empty())
    return refuse("--emit=binary needs --tokenizer tokenizer.json: the "
                  "binary serves text and carries its tokenizer");
  if (outputPath == "-")
    return refuse("--emit=binary needs -o <file> (the executable to write)");
  if (stopAfter != mlir::folio::FolioPhase::Compile)
    return refuse("--emit=binary needs the whole pipeline; --stop-after "
                  "writes IR (--emit=mlir or mlirbc)");
  return success();
}

/// --emit=cuda: a GPU target, an output directory, the whole pipeline.
LogicalResult checkCudaOptions(mlir::folio::FolioPhase stopAfter) {
  if (emit != Emit::Cuda)
    return success();
  auto refuse = [](const Twine &message) {
    errs() << "folioc: error: " << message << "\n";
    return failure();
  };
  if (!::folio::cuda::isSupportedArch(target)) {
    std::string list;
    for (const std::string &a : ::folio::cuda::supportedArchs())
      list += (list.empty() ? "" : ", ") + a;
    return refuse("--emit=cuda: --target=" + target +
                  " is not a GPU target; supported: " + list);
  }
  if (outputPath == "-")
    return refuse("--emit=cuda needs -o <directory> (one .cu file per "
                  "kernel)");
  if (stopAfter != mlir::folio::FolioPhase::Compile)
    return refuse("--emit=cuda needs the whole pipeline; --stop-after "
                  "writes IR (--emit=mlir or mlirbc)");
  return success();
}

/// A GPU --target with a plan output (a .folio or a model binary): the
/// plan carries its CUDA kernels, compiled by NVRTC (through the kernel
/// cache) for that arch.
LogicalResult embedDeviceKernels(::folio::plan::Plan &plan) {
  ::folio::cuda::KernelCacheOptions cache;
  cache.enabled = !noKernelCache;
  cache.dir = kernelCacheDir;
  std::vector<::folio::compiler::EmbeddedCudaKernel> embedded;
  std::vector<std::string> notGenerated;
  if (::folio::Status s = ::folio::compiler::embedCudaKernels(
          plan, target, cache, embedded, notGenerated);
      !s) {
    errs() << "folioc: error: " << s.message() << "\n";
    return failure();
  }
  size_t hits = 0;
  for (const ::folio::compiler::EmbeddedCudaKernel &k : embedded)
    hits += k.cache == ::folio::cuda::CacheOutcome::Hit;
  errs() << "folioc: embedded " << embedded.size() << " CUDA kernels for "
         << target << " (" << hits << " from the kernel cache)\n";
  if (!notGenerated.empty())
    errs() << "folioc: note: no CUDA generator yet for kernels of kind "
           << join(notGenerated, ", ") << "\n";
  return success();
}

/// --no-kernel-cache and --kernel-cache-dir steer the NVRTC compiles of a
/// GPU target's plan output; anywhere else they would do nothing.
LogicalResult checkKernelCacheOptions() {
  if (!noKernelCache && kernelCacheDir.empty())
    return success();
  bool planOutput = emit == Emit::Plan || emit == Emit::Binary ||
                    StringRef(outputPath).ends_with(".folio");
  if (::folio::cuda::isSupportedArch(target) && planOutput)
    return success();
  errs() << "folioc: error: "
         << (noKernelCache ? "--no-kernel-cache" : "--kernel-cache-dir")
         << " applies to the CUDA kernels a GPU --target (sm_80, sm_86, "
            "sm_89, sm_90a) embeds in a plan output (-o x.folio or "
            "--emit=binary); this compile embeds none\n";
  return failure();
}

/// Compiles a copy of `module` with `options` (an f32 cache in place of
/// the requested one when `f32Cache`) and lowers it to a plan, weights
/// unpacked.
llvm::Expected<std::shared_ptr<const ::folio::plan::Plan>>
compileCopy(ModuleOp module, const mlir::folio::FolioPipelineOptions &options,
            bool f32Cache) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(module.getContext());
  mlir::folio::FolioPipelineOptions copyOptions;
  copyOptions.target = options.target;
  copyOptions.blockSize = options.blockSize;
  if (f32Cache) {
    copyOptions.kvCacheDtype = "f32";
  } else {
    copyOptions.kvCacheDtype = options.kvCacheDtype;
    copyOptions.kvCacheSkipLayers = std::vector<int64_t>(
        options.kvCacheSkipLayers.begin(), options.kvCacheSkipLayers.end());
    copyOptions.kvCacheGroupSize = options.kvCacheGroupSize;
    copyOptions.kvCacheResidual = options.kvCacheResidual;
  }
  mlir::folio::buildFolioPipeline(pm, copyOptions,
                                  mlir::folio::FolioPhase::Compile);
  if (failed(pm.run(*copy)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "compiling the calibration copy failed");
  llvm::Expected<::folio::plan::Plan> plan =
      mlir::folio::lowerModuleToPlan(*copy);
  if (!plan)
    return plan.takeError();
  return std::make_shared<const ::folio::plan::Plan>(std::move(*plan));
}

/// Runs the model on --calibration-data: for an fp8 cache, a copy with an
/// f32 cache records the per-head K/V ranges on `module` for
/// folio-quantize-kv; for --weight-dtype int8, a copy compiled exactly as
/// `module` will be (so its steps are the plan's) records every linear
/// weight's inputs for lowerToPlan.
LogicalResult calibrate(ModuleOp module,
                        const mlir::folio::FolioPipelineOptions &options) {
  std::function<::folio::Expected<std::vector<::folio::TokenId>>(
      const std::string &)>
      encode;
  std::optional<::folio::Tokenizer> tokenizer;
  if (!tokenizerPath.empty()) {
    ::folio::Expected<::folio::Tokenizer> tok =
        ::folio::Tokenizer::fromFile(tokenizerPath);
    if (!tok) {
      errs() << "folioc: error: --tokenizer: " << tok.status().message()
             << "\n";
      return failure();
    }
    tokenizer.emplace(std::move(*tok));
    encode = [&](const std::string &text) { return tokenizer->encode(text); };
  }
  ::folio::Expected<std::vector<::folio::TokenId>> tokens =
      ::folio::core::readTokenFile(calibrationData, encode);
  if (!tokens) {
    errs() << "folioc: error: " << tokens.status().message() << "\n";
    return failure();
  }

  std::optional<::folio::KVCacheDType> cache = resolvedKVCacheDType();
  if (cache && isFp8(*cache)) {
    auto plan = compileCopy(module, options, /*f32Cache=*/true);
    if (!plan) {
      errs() << "folioc: error: " << toString(plan.takeError()) << "\n";
      return failure();
    }
    ::folio::Expected<::folio::core::KVAbsMax> ranges =
        ::folio::core::calibrateKVAbsMax(*plan, *tokens);
    if (!ranges) {
      errs() << "folioc: error: --calibration-data: "
             << ranges.status().message() << "\n";
      return failure();
    }
    mlir::folio::setKVCalibration(module, ranges->layers, ranges->kvHeads,
                                  ranges->values);
    errs() << "folioc: calibrated fp8 KV scales on " << ranges->tokens
           << " tokens (windows of " << ::folio::core::calibrationWindow(**plan)
           << ")\n";
  }
  if (int8Weights()) {
    // After the KV calibration, which the final compile will see too.
    auto plan = compileCopy(module, options, /*f32Cache=*/false);
    if (!plan) {
      errs() << "folioc: error: " << toString(plan.takeError()) << "\n";
      return failure();
    }
    ::folio::Expected<::folio::core::LinearInputCalibration> inputs =
        ::folio::core::calibrateLinearInputs(*plan, *tokens);
    if (!inputs) {
      errs() << "folioc: error: --calibration-data: "
             << inputs.status().message() << "\n";
      return failure();
    }
    inputCalibration = std::move(*inputs);
  }
  return success();
}

/// The flags that act on the compile after import: refused when
/// --stop-after ends it before they act, rather than ignored. The target,
/// the cache dtype and the block size are recorded by folio-set-target (the
/// first pass after import), the KV quantizer's flags and the calibration
/// act at page-kv.
LogicalResult checkPhaseOptions(mlir::folio::FolioPhase stopAfter) {
  using mlir::folio::FolioPhase;
  auto refuse = [&](StringRef flag, StringRef acts) {
    errs() << "folioc: error: " << flag << " acts " << acts
           << ", and --stop-after="
           << (stopAfter == FolioPhase::Import ? "import" : "raise")
           << " stops before it\n";
    return failure();
  };
  const cl::Option *const atRaise[] = {&target, &kvCacheDtype, &blockSize};
  const cl::Option *const atPageKV[] = {std::addressof(kvCacheSkipLayers),
                                        &kvCacheGroupSize, &kvCacheResidual,
                                        &calibrationData};
  if (stopAfter == FolioPhase::Import)
    for (const cl::Option *o : atRaise)
      if (o->getNumOccurrences())
        return refuse("--" + o->ArgStr.str(),
                      "at raise (folio-set-target records it)");
  // A plan is the whole pipeline's (fuse is its last phase): the IR of an
  // earlier phase lowered to a plan would be a plan of other kernels, or
  // none.
  bool planOutput =
      emit == Emit::Plan ||
      (!emit.getNumOccurrences() && StringRef(outputPath).ends_with(".folio"));
  if (planOutput && stopAfter != FolioPhase::Fuse &&
      stopAfter != FolioPhase::Compile) {
    errs() << "folioc: error: --stop-after writes a phase's IR (--emit=mlir "
              "or mlirbc), and a plan (--emit=plan, or -o *.folio) is the "
              "whole pipeline's\n";
    return failure();
  }
  if (stopAfter == FolioPhase::Import || stopAfter == FolioPhase::Raise)
    for (const cl::Option *o : atPageKV)
      if (o->getNumOccurrences())
        return refuse("--" + o->ArgStr.str(), "at page-kv (folio-quantize-kv)");
  return success();
}

/// The IR printer's options shape IR text only: with a plan, a binary or
/// CUDA sources as the output they would change nothing.
LogicalResult checkPrinterOptions() {
  if (emit == Emit::MLIR || emit == Emit::Bytecode) {
    if (emit.getNumOccurrences() || !StringRef(outputPath).ends_with(".folio"))
      return success();
  }
  StringMap<cl::Option *> &registered = cl::getRegisteredOptions();
  for (StringRef name :
       {"mlir-elide-resource-strings-if-larger",
        "mlir-elide-elementsattrs-if-larger", "mlir-print-debuginfo"})
    if (auto it = registered.find(name);
        it != registered.end() && it->second->getNumOccurrences()) {
      errs() << "folioc: error: --" << name
             << " shapes the IR text folioc writes, and this output is not IR "
                "(--emit=mlir or mlirbc)\n";
      return failure();
    }
  return success();
}

/// Sizes given as 0 would silently mean the default.
LogicalResult checkSizeOptions() {
  for (const cl::opt<int64_t> *o :
       {&blockSize, &kvCacheGroupSize, &kvCacheResidual})
    if (o->getNumOccurrences() && o->getValue() <= 0) {
      errs() << "folioc: error: --" << o->ArgStr << "=" << o->getValue()
             << " is not a size; give a positive value, or leave the flag "
                "out for the default\n";
      return failure();
    }
  return success();
}

/// -o x.folio names a plan; an explicit --emit of IR would be overridden.
LogicalResult checkOutputName() {
  if (emit.getNumOccurrences() &&
      (emit == Emit::MLIR || emit == Emit::Bytecode) &&
      StringRef(outputPath).ends_with(".folio")) {
    errs() << "folioc: error: --emit="
           << (emit == Emit::MLIR ? "mlir" : "mlirbc") << " writes IR, and -o "
           << outputPath
           << " names a plan (.folio); use --emit=plan, or another file "
              "name for the IR\n";
    return failure();
  }
  return success();
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  std::optional<mlir::folio::FolioPhase> stopAfter = takeStopAfter(argc, argv);
  if (!stopAfter)
    return 1;
  // --mlir-print-ir-after=<pass> and the like name passes by their
  // registered argument; their parser lists the passes registered when
  // the option is created.
  mlir::folio::registerFolioPassesAndPipelines();
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

  std::optional<std::optional<::folio::plan::ElemType>> weightType =
      checkWeightOptions();
  if (!weightType)
    return 1;
  if (failed(checkEmitOptions(*stopAfter)))
    return 1;
  if (failed(checkCudaOptions(*stopAfter)))
    return 1;
  if (failed(checkKernelCacheOptions()))
    return 1;
  if (failed(checkPhaseOptions(*stopAfter)) || failed(checkSizeOptions()) ||
      failed(checkOutputName()) || failed(checkPrinterOptions()))
    return 1;

  bool showProgress = progress == ProgressMode::Always ||
                      (progress == ProgressMode::Auto &&
                       sys::Process::StandardErrIsDisplayed());
  Progress display(showProgress);

  DialectRegistry registry;
  mlir::folio::registerFolioDialects(registry);
  MLIRContext context(registry);
  // Diagnostics name the node or layer; a dump of the whole module as a
  // note would bury them.
  context.printOpOnDiagnostic(false);
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
    pipelineOptions.kvCacheSkipLayers = kvCacheSkipLayers;
    pipelineOptions.kvCacheGroupSize = kvCacheGroupSize.getValue();
    pipelineOptions.kvCacheResidual = kvCacheResidual.getValue();
    if (failed(checkKVOptions()))
      return 1;
    if (!calibrationData.empty()) {
      display.phase("calibrate: " + calibrationData);
      if (failed(calibrate(*module, pipelineOptions)))
        return 1;
    }
    mlir::folio::buildFolioPipeline(pm, pipelineOptions, *stopAfter);
    if (failed(pm.run(*module)))
      return 1;
  }

  if (emit == Emit::Binary) {
    llvm::Expected<::folio::plan::Plan> plan =
        lowerToPlan(*module, *weightType);
    if (!plan) {
      errs() << "folioc: error: " << toString(plan.takeError()) << "\n";
      return 1;
    }
    if (::folio::cuda::isSupportedArch(target) &&
        failed(embedDeviceKernels(*plan)))
      return 1;
    ::folio::tools::EmitBinaryOptions options;
    options.modelPath = inputPath;
    options.target = target;
    options.tokenizerPath = tokenizerPath;
    options.stubPath = runtimeStub;
    options.argv0 = argv[0];
    options.outputPath = outputPath;
    if (::folio::Status s = ::folio::tools::emitModelBinary(*plan, options);
        !s) {
      errs() << "folioc: error: " << s.message() << "\n";
      return 1;
    }
    return 0;
  }

  if (emit == Emit::Cuda) {
    llvm::Expected<::folio::plan::Plan> plan =
        lowerToPlan(*module, *weightType);
    if (!plan) {
      errs() << "folioc: error: " << toString(plan.takeError()) << "\n";
      return 1;
    }
    ::folio::tools::EmitCudaResult result;
    if (::folio::Status s =
            ::folio::tools::emitCudaKernels(*plan, target, outputPath, result);
        !s) {
      errs() << "folioc: error: " << s.message() << "\n";
      return 1;
    }
    errs() << "folioc: wrote " << result.files.size() << " CUDA kernels to "
           << outputPath << "\n";
    if (!result.notGenerated.empty())
      errs() << "folioc: note: no CUDA generator yet for kernels of kind "
             << join(result.notGenerated, ", ") << "\n";
    return 0;
  }

  // A plan goes to its file directly: writePlan writes atomically, and the
  // artifact is binary, never stdout.
  if (emit == Emit::Plan || StringRef(outputPath).ends_with(".folio")) {
    if (outputPath == "-") {
      errs() << "folioc: error: --emit=plan needs -o <file.folio>\n";
      return 1;
    }
    llvm::Expected<::folio::plan::Plan> plan =
        lowerToPlan(*module, *weightType);
    if (!plan) {
      errs() << "folioc: error: " << toString(plan.takeError()) << "\n";
      return 1;
    }
    if (::folio::cuda::isSupportedArch(target) &&
        failed(embedDeviceKernels(*plan)))
      return 1;
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
