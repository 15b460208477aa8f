//===- Roofline.h - folio-bench --mode=roofline -----------------*- C++ -*-===//
//
// Single-stream decode against the memory-bandwidth roofline and a long
// prefill against oneDNN's GEMM peak, per thread count and stored weight
// dtype (folioc --weight-dtype), all measured in one process. See
// docs/bench-cpu-roofline.md.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_ROOFLINE_H
#define FOLIO_TOOLS_FOLIO_BENCH_ROOFLINE_H

#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace folio::bench {

struct RooflineOptions {
  std::vector<int64_t> threads = {1, 2};
  /// Serving-style modes' executor weight type (kept here for the flag
  /// parser); roofline itself compares stored dtypes, `weightDtypes`.
  std::vector<exec::WeightType> weights = {exec::WeightType::BF16,
                                           exec::WeightType::F32};
  /// Stored weight dtypes, each its own plan ("f32", "bf16", "f16",
  /// "int8").
  std::vector<std::string> weightDtypes = {"bf16", "f32"};
  int64_t repeats = 3;
  int64_t prefillTokens = 512;
  int64_t decodeTokens = 32;
  int64_t bandwidthMiB = 1024;
  /// Square GEMM sizes probed; the peak is the best of them.
  std::vector<int64_t> gemmSizes = {2048, 4096};
};

/// The plan whose linear weights are stored as `weightDtype`.
using PlanForDtype = std::function<Expected<std::shared_ptr<const plan::Plan>>(
    const std::string &weightDtype)>;

/// Runs the roofline measurements and returns the JSON report.
Expected<std::string> runRoofline(const PlanForDtype &planFor,
                                  const std::string &modelName,
                                  const RooflineOptions &options);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_ROOFLINE_H
