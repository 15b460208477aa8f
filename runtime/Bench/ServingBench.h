//===- ServingBench.h - Continuous vs static batching -----------*- C++ -*-===//
//
// Runs one workload twice on the same compiled plan and kernels: through
// the continuous-batching engine (paged KV, chunked prefill, preemption),
// and through the static batching users leave behind (Hugging Face style:
// fixed batches of max-num-seqs, prompts left-padded to the batch's
// longest, KV reserved at max-model-len per slot, the batch held until its
// slowest request ends). Both get the same KV memory budget.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_BENCH_SERVINGBENCH_H
#define FOLIO_RUNTIME_BENCH_SERVINGBENCH_H

#include "runtime/Bench/Workload.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"

#include <functional>
#include <memory>
#include <string>

namespace folio::bench {

struct ServingBenchOptions {
  size_t maxModelLen = 128;
  size_t maxNumSeqs = 32;
  size_t maxNumBatchedTokens = 512;
  /// KV memory for either policy, in bytes.
  size_t kvCacheMemory = 0;
  bool enablePrefixCaching = false;
  /// Continuous policy: requests in flight at most, as a client with this
  /// many connections sends them (a request that arrives while all are busy
  /// waits for one to finish); 0 = no limit.
  size_t maxConcurrency = 0;
};

struct PolicyMetrics {
  double outputTokensPerS = 0;
  double requestsPerS = 0;
  double ttftP50Ms = 0, ttftP99Ms = 0;
  double tpotP50Ms = 0, tpotP99Ms = 0;
  /// Live token slots / allocated token slots, sampled after every step.
  double kvUtilizationMean = 0, kvUtilizationPeak = 0;
  uint64_t preemptions = 0;
  /// Continuous policy: prompt tokens found in the prefix cache.
  size_t prefixHitTokens = 0;
  size_t maxResidentSeqs = 0;
  size_t outputTokens = 0;
  /// Output tokens a static batch had to cut: prompt padding plus output
  /// would have passed max-model-len.
  size_t truncatedTokens = 0;
  size_t steps = 0;
  double seconds = 0;
};

using ExecutorFactory = std::function<std::unique_ptr<exec::Executor>()>;

struct RequestTimes;

/// With `requestTimes`, also hands back each request's timings (in
/// workload order), for summaries beyond PolicyMetrics. With `warmup`, the
/// same engine and executor first serve those requests untimed, so the
/// timed run finds its kernels built and its weights paged in, as a server
/// that has been up a while does.
Expected<PolicyMetrics> runContinuous(
    std::shared_ptr<const plan::Plan> plan, const ExecutorFactory &makeExecutor,
    const std::vector<BenchRequest> &work, const ServingBenchOptions &options,
    std::vector<RequestTimes> *requestTimes = nullptr,
    const std::vector<BenchRequest> *warmup = nullptr);

Expected<PolicyMetrics> runStatic(std::shared_ptr<const plan::Plan> plan,
                                  const ExecutorFactory &makeExecutor,
                                  const std::vector<BenchRequest> &work,
                                  const ServingBenchOptions &options);

/// {"continuous": {...}, "static": {...}, "ratio": {...}}: each policy
/// that ran (non-null), and the ratio when both did.
std::string toJson(const PolicyMetrics *continuous,
                   const PolicyMetrics *staticBatching);

} // namespace folio::bench

#endif // FOLIO_RUNTIME_BENCH_SERVINGBENCH_H
