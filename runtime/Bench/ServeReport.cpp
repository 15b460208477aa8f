//===- ServeReport.cpp - Serving figures of one client's view -------------===//

#include "runtime/Bench/ServeReport.h"

namespace folio::bench {

LatencyStats latencyStats(const std::vector<double> &values) {
  LatencyStats s;
  s.samples = values.size();
  if (values.empty())
    return s;
  double sum = 0;
  for (double v : values)
    sum += v;
  s.mean = sum / double(values.size());
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  return s;
}

ServeRunMetrics summarizeServeRun(const std::vector<RequestTimes> &requests,
                                  double seconds) {
  ServeRunMetrics m;
  std::vector<double> ttft, tpot, itl, e2e;
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestTimes &r = requests[i];
    if (!r.error.empty() || r.finish < 0) {
      ++m.failed;
      m.errors.push_back("request " + std::to_string(i) + ": " +
                         (r.error.empty() ? "did not finish" : r.error));
      continue;
    }
    ++m.completed;
    m.promptTokens += r.promptTokens;
    m.outputTokens += r.outputTokens;
    e2e.push_back((r.finish - r.arrival) * 1e3);
    if (r.firstToken >= 0)
      ttft.push_back((r.firstToken - r.arrival) * 1e3);
    if (r.outputTokens > 1)
      tpot.push_back((r.finish - r.firstToken) * 1e3 /
                     double(r.outputTokens - 1));
    for (size_t k = 1; k < r.tokenTimes.size(); ++k)
      itl.push_back((r.tokenTimes[k] - r.tokenTimes[k - 1]) * 1e3);
  }
  m.seconds = seconds;
  if (seconds > 0) {
    m.outputTokensPerS = double(m.outputTokens) / seconds;
    m.requestsPerS = double(m.completed) / seconds;
  }
  m.ttft = latencyStats(ttft);
  m.tpot = latencyStats(tpot);
  m.itl = latencyStats(itl);
  m.e2e = latencyStats(e2e);
  return m;
}

} // namespace folio::bench
