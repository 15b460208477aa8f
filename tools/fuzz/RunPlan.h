//===- RunPlan.h - One step of a plan, as the fuzzers run it ----*- C++ -*-===//
//
// Loads a plan into the CPU executor, allocates a small paged KV cache and
// runs one forward step of a tiny mixed batch, then one greedy and one
// sampled verify call: what a server does with a plan before its first
// token. A bad plan must come back as an error from one of these calls;
// anything else (a crash, a sanitizer report, a hang) is a finding.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FUZZ_RUNPLAN_H
#define FOLIO_TOOLS_FUZZ_RUNPLAN_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <memory>

namespace folio::fuzz {

/// The largest KV cache the harness allocates. A plan whose cache needs
/// more for the few blocks of its batch is not run: a server sizes its
/// block count from a memory budget and refuses such a plan the same way.
inline constexpr int64_t kMaxKVCacheBytes = int64_t(256) << 20;

/// Runs `plan` once as described above; the first error, or ok.
Status runPlanOnce(std::shared_ptr<const plan::Plan> plan);

} // namespace folio::fuzz

#endif // FOLIO_TOOLS_FUZZ_RUNPLAN_H
