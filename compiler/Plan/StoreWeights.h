//===- StoreWeights.h - Linear weights packed into the plan -----*- C++ -*-===//
//
// After lowering, every linear and gated-MLP weight that is a constant is
// packed (codegen/CPU/WeightPack.h, the kernels' own packing code) into the
// dtype folioc --weight-dtype names and stored in the plan as a
// plan::StoredWeight; the model's f32 copy leaves the blob unless another
// step still reads it (a tied embedding). Executors then point their
// kernels at the mapped bytes: loading a plan converts nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_PLAN_STOREWEIGHTS_H
#define FOLIO_COMPILER_PLAN_STOREWEIGHTS_H

#include "compiler/Target/Target.h"
#include "dialects/Folio/IR/ConstantData.h"
#include "runtime/Plan/Plan.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::folio {

/// The --weight-dtype values that store weights packed.
inline constexpr const char *kSupportedWeightDtypes =
    ::folio::kWeightDtypeNames;

/// Parses a --weight-dtype value: "f32", "bf16", "f16", "int8",
/// "fp8_e4m3" or "int4", or "none" (std::nullopt: weights stay constants
/// in the model's dtype and an executor packs them at load). Anything else
/// is refused as unknown, with the supported values.
llvm::Expected<std::optional<::folio::plan::ElemType>>
parseWeightDtype(const std::string &name);

/// The --weight-dtype spelling of a stored weight dtype ("int8" for I8).
const char *weightDtypeName(::folio::plan::ElemType type);

/// Checks a --weight-group-size for `type` (0: not given): int4 takes 32,
/// 64 or 128 and defaults to 128; every other dtype (and "none") refuses
/// one. Returns the group size to store with (0 for the other dtypes).
llvm::Expected<int64_t>
resolveWeightGroupSize(std::optional<::folio::plan::ElemType> type,
                       int64_t groupSize);

/// A weight the model stores quantized (ONNX DequantizeLinear over a
/// constant, com.microsoft MatMulNBits: a folio.dequantize over constants),
/// next to the dequantized f32 constant the plan holds for it (`value`), so
/// that packing can store the model's own codes instead of rounding twice.
struct QuantizedWeightSource : QuantizedWeight {
  int32_t value = -1; ///< the plan value (an f32 constant)
};

/// How storePackedWeights stores the weights.
struct StoreWeightsOptions {
  /// F32, BF16, F16, I8, F8E4M3 or I4.
  ::folio::plan::ElemType type = ::folio::plan::ElemType::BF16;
  /// int4's group along K; 0: not given (128, or a quantized source's own
  /// block where that is exact).
  int64_t groupSize = 0;
  /// The quantized weights the model brought (lowerModuleToPlan finds
  /// them). A group of them that `type` holds exactly (int8 with one scale
  /// per output row and no zero point; int4 with one scale and zero per
  /// group) is stored from its codes, with nothing rounded but the int4
  /// scales to f16.
  const std::vector<QuantizedWeightSource> *sources = nullptr;
  /// --weight-dtype not given: quantized sources keep their own form (int4
  /// or int8, exactly as above) where the kernels take it, and `type`
  /// stores the rest.
  bool keepSourceQuantization = false;
  /// int8 only: the calibrated largest |x| per input column of each weight
  /// group, keyed by the group's (step, first operand) in this plan
  /// (folioc --calibration-data on a plan compiled the same way). It adds
  /// the input rule to the outlier columns (codegen/CPU/WeightPack.h); a
  /// group without an entry keeps the weight rule alone.
  const ::folio::plan::LinearInputAbsMax *inputAbsMax = nullptr;
  /// What int4 weights' linears may round x to (StoredWeight::activations,
  /// folioc --int4-activations): F32 or I8. Not given: I8 when `type` is
  /// I4 (Folio's int4 was asked for) or the source allows it (MatMulNBits
  /// with accuracy_level 4: QuantizedWeight::int8Activations); else F32
  /// for a source's int4 codes kept by keepSourceQuantization, whose ONNX
  /// form (DequantizeLinear then MatMul, MatMulNBits at the other levels)
  /// computes in float.
  std::optional<::folio::plan::ElemType> int4Activations;
  /// With int8, fp8_e4m3 or int4 weights, a tied embedding table (the same
  /// matrix as a stored lm_head, read by the forward's lookups only) is
  /// not kept beside the codes: its lookups read the lm_head's packing
  /// (a StoredWeight for the embedding step's operand 0). False keeps the
  /// table 16-bit (for targets whose lookup reads only 16-bit tables).
  bool shareTiedTables = true;
};

/// Parses a --int4-activations value: "f32" or "int8"; anything else is
/// refused with the supported values.
llvm::Expected<::folio::plan::ElemType>
parseInt4Activations(const std::string &name);

/// Packs and stores the weights of `plan` as `options` says (above).
/// Errors name the step and weight that cannot be packed (a non-finite
/// weight, a group size int4 does not take).
llvm::Error storePackedWeights(::folio::plan::Plan &plan,
                               const StoreWeightsOptions &options);

/// storePackedWeights with `type` and `groupSize` (0: 128) only.
inline llvm::Error storePackedWeights(::folio::plan::Plan &plan,
                                      ::folio::plan::ElemType type,
                                      int64_t groupSize = 0) {
  StoreWeightsOptions options;
  options.type = type;
  options.groupSize = groupSize;
  return storePackedWeights(plan, options);
}

} // namespace mlir::folio

#endif // FOLIO_COMPILER_PLAN_STOREWEIGHTS_H
