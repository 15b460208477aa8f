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
#include "runtime/Plan/Plan.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

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

/// Packs and stores the weights of `plan` as `type` (F32, BF16, F16, I8,
/// F8E4M3 or I4) as described above; `groupSize` is int4's (0: 128).
/// Errors name the step and weight that cannot be packed (a non-finite
/// weight, in features not a multiple of the int4 group size).
llvm::Error storePackedWeights(::folio::plan::Plan &plan,
                               ::folio::plan::ElemType type,
                               int64_t groupSize = 0);

} // namespace mlir::folio

#endif // FOLIO_COMPILER_PLAN_STOREWEIGHTS_H
