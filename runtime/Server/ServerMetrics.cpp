//===- ServerMetrics.cpp - Serving counters in Prometheus text ------------===//

#include "runtime/Server/ServerMetrics.h"

#include <algorithm>
#include <cstdio>

using namespace folio;
using namespace folio::server;

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void header(std::string &out, const char *name, const char *type,
            const char *help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " +
         type + "\n";
}

void sample(std::string &out, const std::string &name, double value) {
  out += name + " " + number(value) + "\n";
}

} // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                    bounds_.begin());
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string &name, std::string &out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  sample(out, name + "_sum", sum_);
  out += name + "_count " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics()
    // vLLM's bounds: first tokens wait for a prefill, later ones for a step.
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
             1.0, 2.5, 5.0, 7.5, 10.0}),
      itl_({0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
            0.5, 0.75, 1.0, 2.5}) {}

void ServerMetrics::recordFinished(FinishReason reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_[reason];
}

void ServerMetrics::recordPromptTokens(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  promptTokens_ += n;
}

void ServerMetrics::recordGenerationTokens(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  generationTokens_ += n;
}

void ServerMetrics::observeTimeToFirstToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ttft_.observe(seconds);
}

void ServerMetrics::observeInterTokenLatency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  itl_.observe(seconds);
}

void ServerMetrics::setEngineGauges(const EngineGauges &gauges) {
  std::lock_guard<std::mutex> lock(mutex_);
  gauges_ = gauges;
}

void ServerMetrics::recordHttpResponse(const std::string &endpoint, int code) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++http_[{endpoint, code}];
}

EngineGauges ServerMetrics::engineGauges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gauges_;
}

uint64_t ServerMetrics::numFinished(FinishReason reason) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = finished_.find(reason);
  return it == finished_.end() ? 0 : it->second;
}

std::string ServerMetrics::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  header(out, "folio_requests_finished_total", "counter",
         "Requests (each of n samples counted) by finish reason.");
  for (FinishReason reason : {FinishReason::Stop, FinishReason::Length,
                              FinishReason::Abort, FinishReason::Error}) {
    auto it = finished_.find(reason);
    out += std::string("folio_requests_finished_total{finish_reason=\"") +
           finishReasonName(reason) + "\"} " +
           std::to_string(it == finished_.end() ? 0 : it->second) + "\n";
  }
  header(out, "folio_http_responses_total", "counter",
         "HTTP responses by endpoint and status code.");
  for (const auto &[key, count] : http_)
    out += "folio_http_responses_total{endpoint=\"" + key.first + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  header(out, "folio_prompt_tokens_total", "counter",
         "Prompt tokens of admitted requests.");
  sample(out, "folio_prompt_tokens_total", double(promptTokens_));
  header(out, "folio_generation_tokens_total", "counter", "Tokens generated.");
  sample(out, "folio_generation_tokens_total", double(generationTokens_));
  header(out, "folio_time_to_first_token_seconds", "histogram",
         "From admission to a sample's first token.");
  ttft_.render("folio_time_to_first_token_seconds", out);
  header(out, "folio_inter_token_latency_seconds", "histogram",
         "Between consecutive token deliveries of a sample.");
  itl_.render("folio_inter_token_latency_seconds", out);
  header(out, "folio_num_requests_running", "gauge",
         "Sequences holding KV blocks.");
  sample(out, "folio_num_requests_running", double(gauges_.numRunning));
  header(out, "folio_num_requests_waiting", "gauge",
         "Sequences waiting for admission (preempted ones included).");
  sample(out, "folio_num_requests_waiting", double(gauges_.numWaiting));
  header(out, "folio_kv_cache_blocks_used", "gauge",
         "KV blocks held by requests; shared blocks count once.");
  sample(out, "folio_kv_cache_blocks_used", double(gauges_.kvBlocksUsed));
  header(out, "folio_kv_cache_blocks_free", "gauge",
         "KV blocks no request holds (prefix-cached ones included).");
  sample(out, "folio_kv_cache_blocks_free", double(gauges_.kvBlocksFree));
  header(out, "folio_kv_cache_usage_ratio", "gauge",
         "Used KV blocks over usable blocks.");
  size_t total = gauges_.kvBlocksUsed + gauges_.kvBlocksFree;
  sample(out, "folio_kv_cache_usage_ratio",
         total ? double(gauges_.kvBlocksUsed) / double(total) : 0.0);
  header(out, "folio_prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache.");
  sample(out, "folio_prefix_cache_queries_total",
         double(gauges_.prefixQueryTokens));
  header(out, "folio_prefix_cache_hits_total", "counter",
         "Prompt tokens found in the prefix cache.");
  sample(out, "folio_prefix_cache_hits_total", double(gauges_.prefixHitTokens));
  header(out, "folio_prefix_cache_hit_rate", "gauge",
         "Prefix-cache hit tokens over queried tokens, since start.");
  sample(out, "folio_prefix_cache_hit_rate",
         gauges_.prefixQueryTokens ? double(gauges_.prefixHitTokens) /
                                         double(gauges_.prefixQueryTokens)
                                   : 0.0);
  header(out, "folio_num_preemptions_total", "counter",
         "Requests preempted (by recomputation) for memory.");
  sample(out, "folio_num_preemptions_total", double(gauges_.numPreemptions));
  if (gauges_.speculative) {
    header(out, "folio_spec_decode_num_draft_tokens_total", "counter",
           "Draft tokens verified.");
    sample(out, "folio_spec_decode_num_draft_tokens_total",
           double(gauges_.specDraftTokens));
    header(out, "folio_spec_decode_num_accepted_tokens_total", "counter",
           "Draft tokens kept.");
    sample(out, "folio_spec_decode_num_accepted_tokens_total",
           double(gauges_.specAcceptedTokens));
    header(out, "folio_spec_decode_draft_acceptance_rate", "gauge",
           "Kept over verified draft tokens, since start.");
    sample(out, "folio_spec_decode_draft_acceptance_rate",
           gauges_.specDraftTokens ? double(gauges_.specAcceptedTokens) /
                                         double(gauges_.specDraftTokens)
                                   : 0.0);
  }
  return out;
}
