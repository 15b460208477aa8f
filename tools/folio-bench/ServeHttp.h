//===- ServeHttp.h - A streaming OpenAI client for benchmarks ---*- C++ -*-===//
//
// Drives a running folio-serve (or any server with OpenAI's
// /v1/completions and SSE streaming) with a benchmark workload: prompts
// as token ids, so the server sees exactly the workload's prompt lengths;
// ignore_eos and max_tokens, so it generates exactly the workload's output
// lengths; greedy, as the in-process benchmark decodes. Each request is
// timed at the client from its SSE chunks. Failures (connection errors,
// non-200 answers, malformed SSE, token counts that differ from the
// workload's) are recorded per request, naming it.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_BENCH_SERVEHTTP_H
#define FOLIO_TOOLS_FOLIO_BENCH_SERVEHTTP_H

#include "runtime/Bench/Metrics.h"
#include "runtime/Bench/Workload.h"
#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::bench {

struct HttpTarget {
  /// "http://host:port", as cpp-httplib's client takes it.
  std::string base;
  /// Sent as "Authorization: Bearer <apiKey>" when set.
  std::string apiKey;
  /// The model name requests carry; empty: the one /v1/models lists.
  std::string modelName;
};

/// Checks that `url` is http://HOST:PORT (with an optional trailing
/// slash); returns the base URL.
Expected<std::string> parseServerUrl(const std::string &url);

struct ServerInfo {
  std::string modelName;
  size_t maxModelLen = 0;
  /// Usable KV blocks (folio_kv_cache_blocks_used + _free on /metrics);
  /// 0 when the server does not report them.
  size_t kvBlocks = 0;
};

/// GET /health (must answer 200), /v1/models and /metrics, before any run.
Expected<ServerInfo> probeServer(const HttpTarget &target);

/// A counter from the server's /metrics (folio_num_preemptions_total,
/// folio_prefix_cache_hits_total); -1 when not reported.
int64_t serverCounter(const HttpTarget &target, const std::string &name);

/// Runs `work` against the server: request i is sent at its arrival time,
/// or when one of `maxConcurrency` connections frees (0: one connection
/// per request). Returns every request's timings, in seconds from the
/// run's start; a failed request has `error` set. `seconds` is the
/// makespan.
std::vector<RequestTimes> runOverHttp(const HttpTarget &target,
                                      const std::vector<BenchRequest> &work,
                                      size_t maxConcurrency, double &seconds);

} // namespace folio::bench

#endif // FOLIO_TOOLS_FOLIO_BENCH_SERVEHTTP_H
