//===- ServeBench.h - The serving benchmark over HTTP -----------*- C++ -*-===//
//
// folio-bench --mode=serve: one workload sent to a running folio-serve over
// HTTP, and, when a model is given, the same workload through the
// in-process continuous-batching engine in the same invocation, so the
// HTTP/in-process throughput ratio compares two runs made minutes apart on
// the same machine. See docs/serving-bench.md.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_SERVEBENCH_H
#define FOLIO_TOOLS_FOLIO_BENCH_SERVEBENCH_H

#include "runtime/Bench/ServingBench.h"
#include "runtime/Executor/Executor.h"
#include "tools/folio-bench/ServeHttp.h"

#include <memory>
#include <string>

namespace folio::bench {

struct ServeBenchOptions {
  HttpTarget target;
  WorkloadOptions workload;
  /// maxModelLen 0: the server's. kvCacheMemory 0: the server's KV blocks.
  /// maxConcurrency applies to both runs.
  ServingBenchOptions serving;
  /// Where the workload's vocabulary comes from without a baseline.
  std::string tokenizer;
  exec::ExecutorOptions executor;
};

/// Runs the benchmark against the server `server` describes (from
/// probeServer); `baseline` (may be null) is the plan the in-process run
/// uses. Returns the JSON report; `failedRequests` counts the HTTP requests
/// that failed (each is in the report's errors).
Expected<std::string> runServeBench(ServeBenchOptions options,
                                    const ServerInfo &server,
                                    std::shared_ptr<const plan::Plan> baseline,
                                    size_t &failedRequests);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_SERVEBENCH_H
