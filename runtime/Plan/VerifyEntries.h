//===- VerifyEntries.h - The verify entries of a plan -----------*- C++ -*-===//
//
// The entries besides forward: speculative decoding's verification, one
// `spec_verify` step each (Plan.h, kVerifyGreedyEntry and its siblings).
// Their rules live here, beside the plan, so that validatePlan and every
// executor that runs them check one and the same thing.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_VERIFYENTRIES_H
#define FOLIO_RUNTIME_PLAN_VERIFYENTRIES_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

namespace folio::plan {

/// Checks every entry of `plan.entries` against forward's value table:
///   - its name is one of the three verify entries, each at most once;
///   - it is one `spec_verify` step whose `mode` ("greedy" for
///     verify_greedy, "sample" for the others) and four operands
///     (target_logits, draft_tokens, draft_probs, uniforms; -1 where the
///     entry takes none) fit the entry, each operand the entry's input of
///     that name, and whose two results (accepted, tokens) are the entry's
///     outputs in order;
///   - its values are tensors no forward step, constant, input or output
///     and no other entry touches, unplanned (buffer -1, no symbol), of the
///     kernels' types: f32 target_logits [-1, -1, V], draft_tokens i32
///     [-1, -1], draft_probs f32 [-1, -1, V], uniforms f32 [-1, -1],
///     accepted i32 [-1], tokens i32 [-1, -1], with V > 0 and equal to the
///     config's vocab when it has one.
/// Ids are range-checked before use, so any plan may be passed.
Status validateEntries(const Plan &plan);

/// The verify entry a batch needs: verify_greedy unless `sample`;
/// verify_sample with draft probabilities, verify_sample_onehot without.
const char *verifyEntryName(bool sample, bool hasDraftProbs);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_VERIFYENTRIES_H
