//===- ServeReportTest.cpp - SSE framing and serve-mode figures -----------===//
//
// The HTTP benchmark's client side without a server: server-sent events
// split at any byte come out whole, broken streams are errors that say
// what was seen, and the figures count failed requests instead of dropping
// them.
//
//===----------------------------------------------------------------------===//

#include "runtime/Bench/ServeReport.h"
#include "runtime/Bench/SseReader.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::bench;

namespace {

TEST(SseReader, EventsSplitAnywhereComeOutWhole) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\n"
                             "data: [DONE]\n\n";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    SseReader reader;
    std::vector<std::string> payloads, all;
    for (size_t i = 0; i < stream.size(); i += piece) {
      size_t n = std::min(piece, stream.size() - i);
      ASSERT_TRUE(reader.feed(stream.data() + i, n, payloads)) << piece;
      all.insert(all.end(), payloads.begin(), payloads.end());
      payloads.clear();
    }
    EXPECT_EQ(all,
              (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}))
        << "pieces of " << piece;
    EXPECT_FALSE(reader.hasPartialEvent());
  }
}

TEST(SseReader, MalformedStreamsAreErrors) {
  std::vector<std::string> payloads;
  SseReader notData;
  Status s = notData.feed("event: x\n\n", 10, payloads);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("expected 'data: <json>' lines, got 'event: x'"),
            std::string::npos)
      << s.message();

  SseReader twoLines;
  s = twoLines.feed("data: 1\ndata: 2\n\n", 17, payloads);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("a second data line"), std::string::npos);

  SseReader truncated;
  ASSERT_TRUE(truncated.feed("data: {\"a\"", 10, payloads));
  EXPECT_TRUE(payloads.empty());
  EXPECT_TRUE(truncated.hasPartialEvent());
}

TEST(ServeReport, FailedRequestsAreCountedAndNamed) {
  std::vector<RequestTimes> requests(3);
  // 0: sent at 1 s, tokens at 1.5, 1.7, 2.0 (3 tokens, one chunk each).
  requests[0].arrival = 1.0;
  requests[0].firstToken = 1.5;
  requests[0].finish = 2.0;
  requests[0].outputTokens = 3;
  requests[0].promptTokens = 7;
  requests[0].tokenTimes = {1.5, 1.7, 2.0};
  // 1: failed after its first token.
  requests[1].arrival = 1.0;
  requests[1].firstToken = 1.2;
  requests[1].outputTokens = 1;
  requests[1].error = "HTTP 500: the engine step failed";
  // 2: never finished, no error recorded.
  requests[2].arrival = 1.0;

  ServeRunMetrics m = summarizeServeRun(requests, 4.0);
  EXPECT_EQ(m.completed, 1u);
  EXPECT_EQ(m.failed, 2u);
  EXPECT_EQ(m.outputTokens, 3u) << "tokens of failed requests do not count";
  EXPECT_EQ(m.promptTokens, 7u);
  EXPECT_DOUBLE_EQ(m.outputTokensPerS, 0.75);
  EXPECT_DOUBLE_EQ(m.requestsPerS, 0.25);
  EXPECT_DOUBLE_EQ(m.ttft.p50, 500);
  EXPECT_DOUBLE_EQ(m.tpot.mean, 250);
  EXPECT_DOUBLE_EQ(m.e2e.p99, 1000);
  EXPECT_DOUBLE_EQ(m.itl.mean, 250);
  EXPECT_NEAR(m.itl.p50, 250, 1e-9);
  EXPECT_NEAR(m.itl.p99, 299, 1e-9); // Between the gaps of 200 and 300.
  ASSERT_EQ(m.errors.size(), 2u);
  EXPECT_EQ(m.errors[0], "request 1: HTTP 500: the engine step failed");
  EXPECT_EQ(m.errors[1], "request 2: did not finish");
}

TEST(ServeReport, LatencyStatsOfNothingHaveNoSamples) {
  LatencyStats s = latencyStats({});
  EXPECT_EQ(s.samples, 0u); // reported as null, not 0 ms
  EXPECT_EQ(latencyStats({1.0, 2.0}).samples, 2u);
}

} // namespace
