//===- Spec.h - folio-bench --mode=spec -------------------------*- C++ -*-===//
//
// Speculative decoding against plain decoding of the same prompts in the
// same run: for each batch size, one run without speculation, one per
// fixed k and one adaptive; throughput, acceptance, per-step costs, the
// analytical speedup bound those imply, and whether the tokens were the
// same.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_SPEC_H
#define FOLIO_TOOLS_FOLIO_BENCH_SPEC_H

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"
#include "tools/common/LoadModel.h"

#include <memory>
#include <string>
#include <vector>

namespace folio::bench {

struct SpecBenchOptions {
  tools::SpeculativeFlags speculative;
  std::vector<int64_t> batchSizes = {1, 4, 16};
  /// "heldout": each prompt is the start of a held-out window; "edit": the
  /// same followed by its own first quarter again, so that the rest of
  /// the prompt is the likely continuation (editing code: the prompt holds
  /// most of the answer).
  std::string workload = "heldout";
  /// int32 token windows of evalWindow tokens; empty: heldout_slice.i32
  /// next to the model.
  std::string evalData;
  int64_t evalWindow = 256;
  /// Defaults: 64 prompt and 128 new tokens for heldout, 128 and 64 for
  /// edit (whose prompt grows by a quarter): within the bundled model's
  /// 256 trained positions either way.
  int64_t promptTokens = 0;
  int64_t newTokens = 0;
  int64_t repeats = 1;
  /// 0: greedy (outputs compared with the baseline's token for token);
  /// otherwise every request samples at this temperature, seeded by its
  /// index plus `seed` (outputs then differ from the baseline's by design:
  /// only their distribution is the same).
  float temperature = 0.0f;
  uint64_t seed = 0;
  int64_t threads = 0;
  /// --weight-dtype: an .onnx target and draft compile with their linear
  /// weights stored so (folioc --weight-dtype: f32, bf16, f16, int8,
  /// fp8_e4m3 or int4), one copy read by every engine; a plan that keeps
  /// f32 constants has each executor pack them so at load (f32, bf16 or
  /// f16 only, checked by the caller).
  std::string weightDtype = "f32";
  /// Each run's JSON gains "profile": the target's time per step kind
  /// (exec::Executor::profile) per decode step, with speculation and in
  /// the baseline, prefill steps left out: where a verify step's extra
  /// time goes.
  bool profile = false;
};

/// Runs the comparison; one JSON object {"runs": [...]}.
Expected<std::string>
runSpecBench(std::shared_ptr<const plan::Plan> plan,
             const std::string &modelPath,
             const mlir::folio::CompileToPlanOptions &compile,
             const SpecBenchOptions &options);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_SPEC_H
