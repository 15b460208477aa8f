//===- ServerMetricsTest.cpp - Prometheus text of the serving counters ----===//

#include "runtime/Server/ServerMetrics.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::server;

namespace {

bool hasLine(const std::string &text, const std::string &line) {
  return text.find("\n" + line + "\n") != std::string::npos ||
         text.rfind(line + "\n", 0) == 0;
}

TEST(ServerMetrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1); // on the bound: counts in le="0.1"
  h.observe(0.5);
  h.observe(3.0);
  std::string out;
  h.render("x", out);
  EXPECT_TRUE(hasLine(out, "x_bucket{le=\"0.1\"} 2")) << out;
  EXPECT_TRUE(hasLine(out, "x_bucket{le=\"1\"} 3")) << out;
  EXPECT_TRUE(hasLine(out, "x_bucket{le=\"+Inf\"} 4")) << out;
  EXPECT_TRUE(hasLine(out, "x_sum 3.65")) << out;
  EXPECT_TRUE(hasLine(out, "x_count 4")) << out;
}

TEST(ServerMetrics, RendersCountersAndGauges) {
  ServerMetrics m;
  m.recordFinished(FinishReason::Stop);
  m.recordFinished(FinishReason::Abort);
  m.recordFinished(FinishReason::Abort);
  m.recordPromptTokens(7);
  m.recordGenerationTokens(5);
  m.recordHttpResponse("/v1/completions", 200);
  m.recordHttpResponse("/v1/completions", 400);
  m.recordHttpResponse("/v1/completions", 400);
  EngineGauges g;
  g.numRunning = 2;
  g.kvBlocksUsed = 3;
  g.kvBlocksFree = 5;
  g.prefixQueryTokens = 40;
  g.prefixHitTokens = 10;
  m.setEngineGauges(g);
  std::string out = m.render();
  EXPECT_TRUE(
      hasLine(out, "folio_requests_finished_total{finish_reason=\"abort\"} 2"));
  EXPECT_TRUE(
      hasLine(out, "folio_requests_finished_total{finish_reason=\"stop\"} 1"));
  EXPECT_TRUE(hasLine(out, "folio_http_responses_total{endpoint=\"/v1/"
                           "completions\",code=\"400\"} 2"));
  EXPECT_TRUE(hasLine(out, "folio_prompt_tokens_total 7"));
  EXPECT_TRUE(hasLine(out, "folio_generation_tokens_total 5"));
  EXPECT_TRUE(hasLine(out, "folio_num_requests_running 2"));
  EXPECT_TRUE(hasLine(out, "folio_kv_cache_blocks_used 3"));
  EXPECT_TRUE(hasLine(out, "folio_kv_cache_blocks_free 5"));
  EXPECT_TRUE(hasLine(out, "folio_kv_cache_usage_ratio 0.375"));
  EXPECT_TRUE(hasLine(out, "folio_prefix_cache_hit_rate 0.25"));
  // Speculative figures appear only when speculation is on.
  EXPECT_EQ(out.find("folio_spec_decode"), std::string::npos);
  g.speculative = true;
  g.specDraftTokens = 8;
  g.specAcceptedTokens = 6;
  m.setEngineGauges(g);
  out = m.render();
  EXPECT_TRUE(hasLine(out, "folio_spec_decode_draft_acceptance_rate 0.75"));
}

} // namespace
