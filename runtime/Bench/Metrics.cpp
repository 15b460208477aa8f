//===- Metrics.cpp - Per-request timings to benchmark figures -------------===//

#include "runtime/Bench/Metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace folio::bench {

double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  double rank = p / 100.0 * double(values.size() - 1);
  size_t lo = size_t(std::floor(rank)), hi = size_t(std::ceil(rank));
  return values[lo] + (values[hi] - values[lo]) * (rank - double(lo));
}

void summarize(const std::vector<RequestTimes> &requests, double seconds,
               PolicyMetrics &m) {
  std::vector<double> ttft, tpot;
  size_t tokens = 0;
  for (const RequestTimes &r : requests) {
    tokens += r.outputTokens;
    if (r.firstToken >= 0)
      ttft.push_back((r.firstToken - r.arrival) * 1e3);
    if (r.finish >= 0 && r.outputTokens > 1)
      tpot.push_back((r.finish - r.firstToken) * 1e3 /
                     double(r.outputTokens - 1));
  }
  m.outputTokens = tokens;
  m.seconds = seconds;
  m.outputTokensPerS = seconds > 0 ? double(tokens) / seconds : 0;
  m.requestsPerS = seconds > 0 ? double(requests.size()) / seconds : 0;
  m.ttftP50Ms = percentile(ttft, 50);
  m.ttftP99Ms = percentile(ttft, 99);
  m.tpotP50Ms = percentile(tpot, 50);
  m.tpotP99Ms = percentile(tpot, 99);
}

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string policyJson(const PolicyMetrics &m) {
  return "{\"output_tokens_per_s\": " + number(m.outputTokensPerS) +
         ", \"requests_per_s\": " + number(m.requestsPerS) +
         ", \"ttft_ms\": {\"p50\": " + number(m.ttftP50Ms) +
         ", \"p99\": " + number(m.ttftP99Ms) +
         "}, \"tpot_ms\": {\"p50\": " + number(m.tpotP50Ms) +
         ", \"p99\": " + number(m.tpotP99Ms) +
         "}, \"kv_utilization\": {\"mean\": " + number(m.kvUtilizationMean) +
         ", \"peak\": " + number(m.kvUtilizationPeak) +
         "}, \"preemptions\": " + std::to_string(m.preemptions) +
         ", \"max_resident_seqs\": " + std::to_string(m.maxResidentSeqs) +
         ", \"output_tokens\": " + std::to_string(m.outputTokens) +
         ", \"truncated_tokens\": " + std::to_string(m.truncatedTokens) +
         ", \"steps\": " + std::to_string(m.steps) +
         ", \"seconds\": " + number(m.seconds) + "}";
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

} // namespace

std::string toJson(const PolicyMetrics *continuous,
                   const PolicyMetrics *staticBatching) {
  std::string out = "{";
  if (continuous)
    out += "\"continuous\": " + policyJson(*continuous);
  if (staticBatching)
    out += std::string(continuous ? ", " : "") +
           "\"static\": " + policyJson(*staticBatching);
  if (continuous && staticBatching)
    out += ", \"ratio\": {\"output_tokens_per_s\": " +
           number(ratio(continuous->outputTokensPerS,
                        staticBatching->outputTokensPerS)) +
           ", \"max_resident_seqs\": " +
           number(ratio(double(continuous->maxResidentSeqs),
                        double(staticBatching->maxResidentSeqs))) +
           "}";
  return out + "}";
}

} // namespace folio::bench
