//===- VerifyWeights.h - The stored weights of a plan -----------*- C++ -*-===//
//
// The rules for Plan::weights, beside the plan so that validatePlan and an
// executor that binds the bytes check one and the same thing.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_VERIFYWEIGHTS_H
#define FOLIO_RUNTIME_PLAN_VERIFYWEIGHTS_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

namespace folio::plan {

/// Checks every stored weight:
///   - it stands for the weight operands of a forward step that has them:
///     a `linear`'s (1, 1 operand), a `gated_mlp`'s gate and up (1, 2) or
///     its down (3, 1); no operand twice, none an input of the plan;
///   - those operands are static 2-D tensors whose shapes, read through
///     the step's weight_layout (in_out: [K, N], out_in: [N, K]), give its
///     n (summed over stacked operands) and k;
///   - its dtype is f32, bf16, f16, int8, fp8_e4m3 or int4; its layout
///     rows_nk, or for int4 int4_g32/g64/g128;
///   - every byte range is 64-byte aligned, inside the blob and exactly
///     the size the dtype implies: n x k weights (int4: n rows of
///     ceil(k / 128) 64-byte blocks); for int8 n f32 scales,
///     numOutliers (at most k) i32 column indices, increasing and below k,
///     and n x numOutliers bf16 outlier weights; for fp8_e4m3 n f32
///     scales; for int4 n x ceil(k / group) f16 (scale, min) pairs (a row's
///     last group may be short); nothing else
///     for the float dtypes;
///   - scales are finite and not negative, int4 mins finite;
///   - a weight operand with no constant is read by nothing else (no other
///     step operand, entry or output): it has no tensor.
/// Ids are range-checked before use, so any plan may be passed.
Status validateStoredWeights(const Plan &plan);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_VERIFYWEIGHTS_H
