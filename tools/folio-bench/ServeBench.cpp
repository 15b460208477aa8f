//===- ServeBench.cpp - The serving benchmark over HTTP -------------------===//

#include "tools/folio-bench/ServeBench.h"

#include "runtime/Bench/ServeReport.h"
#include "runtime/Tokenizer/Tokenizer.h"
#include "tools/folio-bench/Json.h"

#include <iostream>
#include <optional>

namespace folio::bench {
namespace {

void latencyJson(Json &j, const std::string &key, const LatencyStats &s) {
  // No sample (every request made one token: no inter-token time) is no
  // latency, not one of 0 ms.
  if (s.samples == 0) {
    j.key(key).null();
    return;
  }
  j.key(key)
      .beginObject()
      .field("mean", s.mean)
      .field("p50", s.p50)
      .field("p90", s.p90)
      .field("p99", s.p99)
      .endObject();
}

void runJson(Json &j, const ServeRunMetrics &m) {
  j.beginObject()
      .field("completed", int64_t(m.completed))
      .field("failed", int64_t(m.failed))
      .field("prompt_tokens", int64_t(m.promptTokens))
      .field("output_tokens", int64_t(m.outputTokens))
      .field("seconds", m.seconds)
      .field("output_tokens_per_s", m.outputTokensPerS)
      .field("requests_per_s", m.requestsPerS);
  j.key("preemptions");
  if (m.preemptions >= 0)
    j.value(m.preemptions);
  else
    j.null();
  j.key("prefix_cache_hit_tokens");
  if (m.prefixCacheHitTokens >= 0)
    j.value(m.prefixCacheHitTokens);
  else
    j.null();
  latencyJson(j, "ttft_ms", m.ttft);
  latencyJson(j, "tpot_ms", m.tpot);
  latencyJson(j, "itl_ms", m.itl);
  latencyJson(j, "e2e_ms", m.e2e);
  j.key("errors").beginArray();
  for (const std::string &e : m.errors)
    j.value(e);
  j.endArray().endObject();
}

/// The in-process run of the same workload on the same engine settings,
/// after the same warm-up the server gets.
Expected<ServeRunMetrics> runInProcess(std::shared_ptr<const plan::Plan> plan,
                                       const exec::ExecutorOptions &executor,
                                       const std::vector<BenchRequest> &work,
                                       const std::vector<BenchRequest> &warmup,
                                       const ServingBenchOptions &options) {
  ExecutorFactory factory = [executor] {
    return exec::createCPUExecutor(executor);
  };
  std::vector<RequestTimes> times;
  Expected<PolicyMetrics> m =
      runContinuous(plan, factory, work, options, &times, &warmup);
  if (!m)
    return m.status();
  ServeRunMetrics summary = summarizeServeRun(times, m->seconds);
  summary.preemptions = int64_t(m->preemptions);
  summary.prefixCacheHitTokens = int64_t(m->prefixHitTokens);
  return summary;
}

/// Bytes of `blocks` usable KV blocks (plus the reserved block 0) as the
/// baseline's executor lays them out.
Expected<size_t> kvBytes(std::shared_ptr<const plan::Plan> plan,
                         const exec::ExecutorOptions &executor, size_t blocks) {
  std::unique_ptr<exec::Executor> probe = exec::createCPUExecutor(executor);
  if (Status s = probe->load(std::move(plan)); !s)
    return s;
  exec::KVCacheLayout layout = probe->kvCacheLayout();
  if (layout.bytesPerBlock <= 0)
    return Status::invalidArgument("the baseline model has no KV cache");
  return (blocks + 1) * size_t(layout.bytesPerBlock);
}

} // namespace

Expected<std::string> runServeBench(ServeBenchOptions o,
                                    const ServerInfo &server,
                                    std::shared_ptr<const plan::Plan> baseline,
                                    size_t &failedRequests) {
  o.target.modelName = server.modelName;

  size_t &maxModelLen = o.serving.maxModelLen;
  if (maxModelLen == 0) {
    if (server.maxModelLen == 0)
      return Status::invalidArgument(
          "the server's /v1/models gives no max_model_len; give "
          "--max-model-len");
    maxModelLen = server.maxModelLen;
  } else if (server.maxModelLen && maxModelLen > server.maxModelLen) {
    return Status::invalidArgument("--max-model-len " +
                                   std::to_string(maxModelLen) +
                                   " exceeds the server's max_model_len of " +
                                   std::to_string(server.maxModelLen));
  }
  o.workload.maxModelLen = maxModelLen;
  if (baseline) {
    o.workload.vocabSize = size_t(baseline->configValue("vocab", 0));
    int64_t positions = baseline->configValue("max_positions", 0);
    if (positions > 0 && maxModelLen > size_t(positions))
      return Status::invalidArgument("max-model-len " +
                                     std::to_string(maxModelLen) +
                                     " exceeds the baseline model's " +
                                     std::to_string(positions) + " positions");
  } else if (!o.tokenizer.empty()) {
    Expected<Tokenizer> tokenizer = Tokenizer::fromFile(o.tokenizer);
    if (!tokenizer)
      return tokenizer.status();
    o.workload.vocabSize = tokenizer->vocabSize();
  } else {
    return Status::invalidArgument(
        "--mode=serve needs the vocabulary for its prompt token ids: give "
        "--model (which also runs the in-process baseline) or --tokenizer");
  }
  Expected<std::vector<BenchRequest>> work = makeWorkload(o.workload);
  if (!work)
    return work.status();
  // Both sides serve a workload of the same shape untimed first, so neither
  // timed run pays for building kernels (the CPU executor builds its GEMM
  // primitives per batch-size bucket on first use) that the other has
  // already built. Another seed: no prompt of it is in the prefix cache
  // when the timed run starts.
  WorkloadOptions warmupOptions = o.workload;
  warmupOptions.seed = o.workload.seed + 1;
  Expected<std::vector<BenchRequest>> warmup = makeWorkload(warmupOptions);
  if (!warmup)
    return warmup.status();

  std::optional<ServeRunMetrics> inProcess;
  if (baseline) {
    if (o.serving.kvCacheMemory == 0) {
      if (server.kvBlocks == 0)
        return Status::invalidArgument(
            "the server reports no KV blocks on /metrics; give "
            "--kv-cache-memory for the in-process baseline");
      Expected<size_t> bytes = kvBytes(baseline, o.executor, server.kvBlocks);
      if (!bytes)
        return bytes.status();
      o.serving.kvCacheMemory = *bytes;
    }
    std::cerr << "folio-bench: in process, " << work->size() << " requests\n";
    Expected<ServeRunMetrics> m =
        runInProcess(baseline, o.executor, *work, *warmup, o.serving);
    if (!m)
      return m.status();
    inProcess = *m;
  }

  std::cerr << "folio-bench: over HTTP to " << o.target.base << ", "
            << work->size() << " requests\n";
  // A request the server refuses fails here, before the timed run, with
  // the server's reason.
  double seconds = 0;
  ServeRunMetrics untimed = summarizeServeRun(
      runOverHttp(o.target, *warmup, o.serving.maxConcurrency, seconds),
      seconds);
  if (untimed.failed)
    return Status::invalidArgument(
        std::to_string(untimed.failed) + " of " +
        std::to_string(warmup->size()) +
        " requests of the untimed warm-up run failed; the first: " +
        untimed.errors.front());
  const char *preemptionsName = "folio_num_preemptions_total";
  const char *hitsName = "folio_prefix_cache_hits_total";
  int64_t preemptionsBefore = serverCounter(o.target, preemptionsName);
  int64_t hitsBefore = serverCounter(o.target, hitsName);
  std::vector<RequestTimes> times =
      runOverHttp(o.target, *work, o.serving.maxConcurrency, seconds);
  ServeRunMetrics http = summarizeServeRun(times, seconds);
  int64_t preemptionsAfter = serverCounter(o.target, preemptionsName);
  int64_t hitsAfter = serverCounter(o.target, hitsName);
  if (preemptionsBefore >= 0 && preemptionsAfter >= 0)
    http.preemptions = preemptionsAfter - preemptionsBefore;
  if (hitsBefore >= 0 && hitsAfter >= 0)
    http.prefixCacheHitTokens = hitsAfter - hitsBefore;
  // An earlier run of the same seed leaves its prompts in the server's
  // prefix cache; the in-process engine starts empty.
  if (inProcess && http.prefixCacheHitTokens > inProcess->prefixCacheHitTokens)
    std::cerr << "folio-bench: warning: the server found "
              << http.prefixCacheHitTokens
              << " prompt tokens in its prefix cache, the in-process run "
              << inProcess->prefixCacheHitTokens
              << ": the server has served this workload before; restart it "
                 "or use another --seed for a fair ratio\n";
  failedRequests = http.failed;
  for (const std::string &e : http.errors)
    std::cerr << "folio-bench: error: " << e << "\n";

  Json j;
  j.beginObject()
      .field("mode", "serve")
      .field("url", o.target.base)
      .field("model", o.target.modelName)
      .field("workload", o.workload.kind)
      .field("num_requests", int64_t(work->size()))
      .field("seed", int64_t(o.workload.seed))
      .field("request_rate", o.workload.requestRate)
      .field("max_concurrency", int64_t(o.serving.maxConcurrency))
      .field("max_model_len", int64_t(maxModelLen));
  j.key("http");
  runJson(j, http);
  j.key("in_process");
  if (inProcess)
    runJson(j, *inProcess);
  else
    j.null();
  j.key("ratio");
  if (inProcess) {
    double base = inProcess->outputTokensPerS;
    j.beginObject()
        .field("output_tokens_per_s",
               base > 0 ? http.outputTokensPerS / base : 0.0)
        .endObject();
  } else {
    j.null();
  }
  j.endObject();
  return j.str() + "\n";
}

} // namespace folio::bench
