//===- RunVerify.h - The CPU executor's verify entries ----------*- C++ -*-===//
//
// Executor::verify on the CPU: the plan's verify entry for the batch's mode
// (runtime/Plan/VerifyEntries.h), its spec_verify step run by the
// codegen/CPU kernel on the caller's arrays (views, nothing copied).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_RUNVERIFY_H
#define FOLIO_RUNTIME_EXECUTOR_RUNVERIFY_H

#include "codegen/CPU/SpecVerify.h"
#include "codegen/CPU/ThreadPool.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <cstdint>
#include <vector>

namespace folio::exec {

/// The CPU verify kernel's arguments for `batch` (codegen/CPU/SpecVerify.h),
/// with `accepted` sized [S] (zeros) and `tokens` [S, K+1] (-1) as its
/// outputs. The sizes are the caller's to have checked.
cpu::SpecVerifyArgs specVerifyArgs(const VerifyBatch &batch,
                                   std::vector<int32_t> &accepted,
                                   std::vector<int32_t> &tokens);

/// Runs the entry of `plan` that `batch` needs (verify_greedy,
/// verify_sample, or verify_sample_onehot when draftProbs is null), whose
/// form validateEntries has checked. Refuses, before running anything, a
/// plan without that entry (naming it and saying how to get it), a batch
/// whose vocab is not the entry's, negative counts, missing arrays, and
/// draft probabilities or uniforms in greedy mode (which reads neither).
/// `accepted` receives [S], `tokens` [S, K+1].
Status runVerifyEntry(const plan::Plan &plan, const VerifyBatch &batch,
                      std::vector<int32_t> &accepted,
                      std::vector<int32_t> &tokens, cpu::ThreadPool &pool);

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_RUNVERIFY_H
