//===- ServeReport.h - Serving figures of one client's view -----*- C++ -*-===//
//
// The figures of folio-bench's serve mode, computed the same way for a run
// over HTTP (timed at the client, per SSE chunk) and for the in-process
// baseline (timed per engine step): throughput over the makespan, and
// time to first token, time per output token, inter-token latency and
// end-to-end latency as mean and percentiles. Failed requests are counted
// and listed, never dropped. folio-bench writes them as JSON; see
// docs/serving-bench.md.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_BENCH_SERVEREPORT_H
#define FOLIO_RUNTIME_BENCH_SERVEREPORT_H

#include "runtime/Bench/Metrics.h"

#include <string>
#include <vector>

namespace folio::bench {

/// Milliseconds.
struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  /// How many values they summarise; 0: none (no latency, not 0 ms).
  size_t samples = 0;
};

struct ServeRunMetrics {
  size_t completed = 0, failed = 0;
  /// Of completed requests only.
  size_t promptTokens = 0, outputTokens = 0;
  double seconds = 0;
  double outputTokensPerS = 0, requestsPerS = 0;
  LatencyStats ttft, tpot, itl, e2e;
  /// Requests preempted for KV memory during the run; -1: unknown (a
  /// server that does not report it).
  int64_t preemptions = -1;
  /// Prompt tokens found in the prefix cache during the run; -1: unknown.
  int64_t prefixCacheHitTokens = -1;
  /// "request I: why", one per failed request.
  std::vector<std::string> errors;
};

/// Mean and percentiles of `values`; zeros when empty.
LatencyStats latencyStats(const std::vector<double> &values);

/// Summarizes one run of `seconds` (the makespan).
ServeRunMetrics summarizeServeRun(const std::vector<RequestTimes> &requests,
                                  double seconds);

} // namespace folio::bench

#endif // FOLIO_RUNTIME_BENCH_SERVEREPORT_H
