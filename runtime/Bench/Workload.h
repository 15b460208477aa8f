//===- Workload.h - Synthetic serving workloads -----------------*- C++ -*-===//
//
// Requests whose prompt and output lengths are long-tailed the way chat
// traffic is (ShareGPT: most prompts short, a few very long; outputs
// likewise), scaled to the model's context so the same workload shape
// exercises a 128-token toy model and a 4k-token one. See
// docs/serving-bench.md for the distributions and why.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_BENCH_WORKLOAD_H
#define FOLIO_RUNTIME_BENCH_WORKLOAD_H

#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace folio::bench {

struct BenchRequest {
  std::vector<TokenId> prompt;
  size_t outputLength = 0;
  /// Seconds after the benchmark starts.
  double arrivalTime = 0;
};

struct WorkloadOptions {
  /// Only "sharegpt-like" today.
  std::string kind = "sharegpt-like";
  size_t numRequests = 64;
  uint64_t seed = 0;
  /// Prompt + output of any request stays within this.
  size_t maxModelLen = 128;
  size_t vocabSize = 256;
  /// Requests per second (Poisson arrivals); 0 = all arrive at once.
  double requestRate = 0;
};

/// Deterministic for given options. Fails on an unknown kind or limits
/// that leave no room (maxModelLen < 2, vocab 0, no requests).
Expected<std::vector<BenchRequest>>
makeWorkload(const WorkloadOptions &options);

} // namespace folio::bench

#endif // FOLIO_RUNTIME_BENCH_WORKLOAD_H
