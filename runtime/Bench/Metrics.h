//===- Metrics.h - Per-request timings to benchmark figures -----*- C++ -*-===//

#ifndef FOLIO_RUNTIME_BENCH_METRICS_H
#define FOLIO_RUNTIME_BENCH_METRICS_H

#include "runtime/Bench/ServingBench.h"

#include <string>
#include <vector>

namespace folio::bench {

/// One request's life, in seconds from the benchmark's start.
struct RequestTimes {
  double arrival = 0;
  double firstToken = -1;
  double finish = -1;
  size_t outputTokens = 0;
  size_t promptTokens = 0;
  /// When each batch of tokens reached the client (an engine step's output
  /// in process, an SSE chunk over HTTP): inter-token latencies are the
  /// gaps between consecutive entries.
  std::vector<double> tokenTimes;
  /// Non-empty: the request failed, and why (its tokens are not counted).
  std::string error;
};

/// The p-th percentile (0..100) by linear interpolation; 0 when empty.
double percentile(std::vector<double> values, double p);

/// Fills the throughput and latency fields of `m` from the requests.
void summarize(const std::vector<RequestTimes> &requests, double seconds,
               PolicyMetrics &m);

/// Accumulates KV utilization samples.
struct UtilizationTracker {
  double sum = 0, peak = 0;
  size_t samples = 0;
  void add(double live, double allocated) {
    if (allocated > 0)
      add(live / allocated);
  }
  void add(double u) {
    sum += u;
    peak = std::max(peak, u);
    ++samples;
  }
  void store(PolicyMetrics &m) const {
    m.kvUtilizationMean = samples ? sum / double(samples) : 0;
    m.kvUtilizationPeak = peak;
  }
};

} // namespace folio::bench

#endif // FOLIO_RUNTIME_BENCH_METRICS_H
