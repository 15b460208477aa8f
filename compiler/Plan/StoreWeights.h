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

#include "runtime/Plan/Plan.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::folio {

/// The --weight-dtype values that store weights packed.
inline constexpr const char *kSupportedWeightDtypes = "f32, bf16, f16, int8";

/// Parses a --weight-dtype value: "f32", "bf16", "f16" or "int8", or
/// "none" (std::nullopt: weights stay constants in the model's dtype and an
/// executor packs them at load). "fp8_e4m3" and "int4" are refused as not
/// supported yet; anything else as unknown. Both errors list the
/// supported values.
llvm::Expected<std::optional<::folio::plan::ElemType>>
parseWeightDtype(const std::string &name);

/// The --weight-dtype spelling of a stored weight dtype ("int8" for I8).
const char *weightDtypeName(::folio::plan::ElemType type);

/// Packs and stores the weights of `plan` as `type` (F32, BF16, F16 or I8)
/// as described above. Errors name the step whose weight cannot be packed
/// (a non-finite weight, say).
llvm::Error storePackedWeights(::folio::plan::Plan &plan,
                               ::folio::plan::ElemType type);

} // namespace mlir::folio

#endif // FOLIO_COMPILER_PLAN_STOREWEIGHTS_H
