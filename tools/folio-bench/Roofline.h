//===- Roofline.h - folio-bench --mode=roofline -----------------*- C++ -*-===//
//
// Single-stream decode against the memory-bandwidth roofline and a long
// prefill against oneDNN's GEMM peak, per thread count and weight type, all
// measured in one process. See docs/bench-cpu-roofline.md.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_ROOFLINE_H
#define FOLIO_TOOLS_FOLIO_BENCH_ROOFLINE_H

#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"

#include <memory>
#include <string>
#include <vector>

namespace folio::bench {

struct RooflineOptions {
  std::vector<int64_t> threads = {1, 2};
  std::vector<exec::WeightType> weights = {exec::WeightType::BF16,
                                           exec::WeightType::F32};
  int64_t repeats = 3;
  int64_t prefillTokens = 512;
  int64_t decodeTokens = 32;
  int64_t bandwidthMiB = 1024;
  /// Square GEMM sizes probed; the peak is the best of them.
  std::vector<int64_t> gemmSizes = {2048, 4096};
};

/// Runs the roofline measurements and returns the JSON report.
Expected<std::string> runRoofline(std::shared_ptr<const plan::Plan> plan,
                                  const std::string &modelName,
                                  const RooflineOptions &options);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_ROOFLINE_H
