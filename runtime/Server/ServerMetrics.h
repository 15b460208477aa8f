//===- ServerMetrics.h - Serving counters in Prometheus text ---*- C++ -*-===//
//
// What /metrics reports. The engine thread records token and latency
// events and refreshes the gauges (queue lengths, KV blocks, prefix-cache
// and speculative figures) after every step; HTTP threads record their
// responses; the /metrics handler renders a consistent snapshot. One mutex
// guards it all: updates are a few additions per engine step.
//
// Names follow vLLM's metrics with a `folio_` prefix; docs/server.md lists
// them.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SERVER_SERVERMETRICS_H
#define FOLIO_RUNTIME_SERVER_SERVERMETRICS_H

#include "runtime/Scheduler/Request.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace folio::server {

/// A cumulative Prometheus histogram with fixed upper bounds.
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// The `_bucket`, `_sum` and `_count` lines of metric `name`.
  void render(const std::string &name, std::string &out) const;
  uint64_t count() const { return count_; }

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; ///< per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// The engine's state after a step, as the gauges show it.
struct EngineGauges {
  size_t numRunning = 0;
  size_t numWaiting = 0;
  /// Physical blocks held by at least one request (shared ones once), and
  /// free ones (prefix-cached blocks nobody holds count as free).
  size_t kvBlocksUsed = 0;
  size_t kvBlocksFree = 0;
  uint64_t prefixQueryTokens = 0;
  uint64_t prefixHitTokens = 0;
  uint64_t numPreemptions = 0;
  bool speculative = false;
  uint64_t specDraftTokens = 0;
  uint64_t specAcceptedTokens = 0;
};

class ServerMetrics {
public:
  ServerMetrics();

  void recordFinished(FinishReason reason);
  void recordPromptTokens(uint64_t n);
  void recordGenerationTokens(uint64_t n);
  void observeTimeToFirstToken(double seconds);
  void observeInterTokenLatency(double seconds);
  void setEngineGauges(const EngineGauges &gauges);
  /// One HTTP response of `endpoint` ("/v1/completions", ...) with `code`.
  void recordHttpResponse(const std::string &endpoint, int code);

  EngineGauges engineGauges() const;
  uint64_t numFinished(FinishReason reason) const;

  /// Everything in the Prometheus text exposition format.
  std::string render() const;

private:
  mutable std::mutex mutex_;
  std::map<FinishReason, uint64_t> finished_;
  uint64_t promptTokens_ = 0;
  uint64_t generationTokens_ = 0;
  Histogram ttft_;
  Histogram itl_;
  EngineGauges gauges_;
  std::map<std::pair<std::string, int>, uint64_t> http_;
};

} // namespace folio::server

#endif // FOLIO_RUNTIME_SERVER_SERVERMETRICS_H
