//===- LowerToPlan.h - The serving entry as a plan --------------*- C++ -*-===//
//
// Turns the compiled module's `forward` function into a runtime plan: one
// step per op in program order, one value slot per SSA value, every
// constant's bytes (dense attributes and the model's dense_resource weights)
// copied once into the plan's aligned blob. The verify entries
// folio-speculative adds become the plan's entries (Plan::entries).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_PLAN_LOWERTOPLAN_H
#define FOLIO_COMPILER_PLAN_LOWERTOPLAN_H

#include "compiler/Plan/StoreWeights.h"
#include "mlir/IR/BuiltinOps.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir::folio {

/// Lowers `module`'s serving entry (after page-kv). Errors name the op that
/// cannot be represented (an unsupported element type, a region op).
/// Weights the model stores quantized become f32 constants in the plan;
/// `sources`, when given, receives their codes and scales for
/// storePackedWeights (StoreWeights.h).
llvm::Expected<::folio::plan::Plan>
lowerModuleToPlan(ModuleOp module,
                  std::vector<QuantizedWeightSource> *sources = nullptr);

struct CompileToPlanOptions {
  std::string target = "cpu";
  /// `auto`: the target's default (int8 on the CPU), see compiler/Target.
  std::string kvCacheDtype = "auto";
  /// Layers whose cache stays at 16 bits (bf16).
  std::vector<int64_t> kvCacheSkipLayers;
  /// int4 caches: elements per scale group; 0: the largest even divisor of
  /// head_dim up to 32.
  int64_t kvCacheGroupSize = 0;
  /// int2 (KIVI) caches: the newest tokens kept in full precision; 0: 128
  /// rounded up to a multiple of the block size.
  int64_t kvCacheResidual = 0;
  /// 0: 16, or 32 for int2 caches.
  int64_t blockSize = 0;
  /// Calibrated abs-max of K and V per layer and KV head, [layers, 2,
  /// kvHeads] row-major, for caches with static scales (fp8); empty: none,
  /// and quantize-kv warns and uses its documented default.
  std::vector<float> kvCalibration;
  int64_t kvCalibrationLayers = 0;
  int64_t kvCalibrationHeads = 0;
  /// How linear weights are stored in the plan (StoreWeights.h): "none"
  /// keeps them as the model has them (an executor packs them at load);
  /// "f32", "bf16", "f16" or "int8" packs them at compile time. A .folio
  /// plan must have been compiled with it unless it is "none".
  std::string weightDtype = "none";
  /// --weight-group-size: int4's group along K (0: 128); refused for the
  /// other dtypes (StoreWeights.h, resolveWeightGroupSize).
  int64_t weightGroupSize = 0;
  /// StoreWeightsOptions::shareTiedTables: with int8, fp8_e4m3 or int4
  /// weights a tied embedding's lookups read the lm_head's codes.
  bool shareTiedTables = true;
  /// Weights the model brings quantized keep their own int4/int8 codes
  /// where the kernels take them exactly, and `weightDtype` stores the
  /// rest: what folioc does without --weight-dtype (StoreWeightsOptions).
  bool keepSourceQuantization = false;
  /// What int4 weights' linears may round x to: "f32", "int8", or "" for
  /// the default (StoreWeightsOptions::int4Activations).
  std::string int4Activations;
  /// int8 weights: calibrated input abs-max per weight group of the plan
  /// this compile makes (StoreWeightsOptions::inputAbsMax); null: none.
  const ::folio::plan::LinearInputAbsMax *inputAbsMax = nullptr;
  /// A .folio plan only: hash its weight blob against the checksum the file
  /// stores (the metadata's is always checked). Off skips one pass over
  /// the weights at load time and trusts them.
  bool verifyWeights = true;
  /// Receives each compiler warning; unset: printed to stderr.
  std::function<void(const std::string &)> onWarning;
};

/// Records calibrated K/V ranges on `module` (the `folio.kv_calibration`
/// attribute folio-quantize-kv reads): [layers, 2, kvHeads] abs-max.
void setKVCalibration(ModuleOp module, int64_t layers, int64_t kvHeads,
                      llvm::ArrayRef<float> absMax);

/// Loads, imports and compiles an ONNX model, then lowers it: what
/// `folio-run --model x.onnx` does in-process. Diagnostics are collected
/// into the error's message.
llvm::Expected<::folio::plan::Plan>
compileONNXToPlan(const std::string &path, const CompileToPlanOptions &options);

/// The dtype a plan's linear weights were stored in ("int8", "bf16", ...;
/// "int4+bf16" when a model's own int4 weights sit next to bf16 ones), or
/// "none" when it stores none packed.
std::string planWeightDType(const ::folio::plan::Plan &plan);

/// What the tools take as --model: a `.folio` plan, read (weights mapped,
/// not copied), or an `.onnx` model, compiled in-process. Errors name the
/// file and say which suffixes are accepted. A `.folio` plan must have been
/// compiled with `options.kvCacheDtype` unless that is `auto`, and with
/// `options.weightDtype` unless that is `none`; the other compile options
/// apply to `.onnx` models only.
::folio::Expected<::folio::plan::Plan>
loadOrCompilePlan(const std::string &path, const CompileToPlanOptions &options);

} // namespace mlir::folio

#endif // FOLIO_COMPILER_PLAN_LOWERTOPLAN_H
