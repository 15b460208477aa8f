//===- RequestStreamTest.cpp - The engine-to-client channel ---------------===//
//
// Events arrive in order and exactly once, each sample ends once whoever
// ends it first, and a waiting consumer wakes when the producer (another
// thread) pushes.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/RequestStream.h"

#include <gtest/gtest.h>

#include <thread>

using namespace folio;
using namespace folio::server;
using namespace std::chrono_literals;

namespace {

StreamEvent tokens(size_t sample, std::vector<TokenId> ids) {
  StreamEvent e;
  e.sample = sample;
  e.tokens = std::move(ids);
  return e;
}

StreamEvent end(size_t sample, FinishReason reason) {
  StreamEvent e;
  e.sample = sample;
  e.finished = true;
  e.finishReason = reason;
  return e;
}

TEST(RequestStream, DeliversEventsInOrderOnce) {
  RequestStream stream("r", 1, 3);
  stream.push(tokens(0, {1, 2}));
  stream.push(tokens(0, {3}));
  std::vector<StreamEvent> got = stream.wait(0ms);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].tokens, (std::vector<TokenId>{1, 2}));
  EXPECT_EQ(got[1].tokens, (std::vector<TokenId>{3}));
  EXPECT_TRUE(stream.wait(0ms).empty());
  EXPECT_FALSE(stream.allFinished());
}

TEST(RequestStream, EachSampleEndsOnce) {
  RequestStream stream("r", 2, 3);
  stream.push(end(1, FinishReason::Stop));
  // The engine's own end of the same sample arrives late and is dropped,
  // as are tokens after the end.
  stream.push(tokens(1, {7}));
  stream.push(end(1, FinishReason::Abort));
  EXPECT_TRUE(stream.sampleFinished(1));
  EXPECT_FALSE(stream.sampleFinished(0));
  EXPECT_FALSE(stream.allFinished());
  stream.push(end(0, FinishReason::Length));
  EXPECT_TRUE(stream.allFinished());
  std::vector<StreamEvent> got = stream.wait(0ms);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].finishReason, FinishReason::Stop);
  EXPECT_EQ(got[1].finishReason, FinishReason::Length);
}

TEST(RequestStream, WaiterWakesOnPushFromAnotherThread) {
  RequestStream stream("r", 1, 1);
  std::thread producer([&] {
    for (TokenId t = 0; t < 100; ++t)
      stream.push(tokens(0, {t}));
    stream.push(end(0, FinishReason::Length));
  });
  std::vector<TokenId> seen;
  bool ended = false;
  // Bounded: a lost wake-up would show as a timeout here, not a hang.
  for (int i = 0; i < 1000 && !ended; ++i)
    for (StreamEvent &e : stream.wait(5s)) {
      seen.insert(seen.end(), e.tokens.begin(), e.tokens.end());
      ended |= e.finished;
    }
  producer.join();
  ASSERT_TRUE(ended);
  ASSERT_EQ(seen.size(), 100u);
  for (TokenId t = 0; t < 100; ++t)
    EXPECT_EQ(seen[size_t(t)], t);
}

// Tests that a writer letting tokens gather is woken by the request's end,
// not by its tokens: it then finds every token queued, in order.
TEST(RequestStream, WaitAllFinishedIgnoresTokensAndWakesAtTheEnd) {
  RequestStream stream("r", 2, 1);
  stream.waitAllFinished(1ms); // Nothing ends: the timeout returns.
  EXPECT_FALSE(stream.allFinished());
  std::thread producer([&] {
    for (TokenId t = 0; t < 50; ++t) {
      stream.push(tokens(0, {t}));
      stream.push(tokens(1, {t}));
    }
    stream.push(end(0, FinishReason::Length));
    stream.push(end(1, FinishReason::Length));
  });
  // Bounded: a lost wake-up shows as a timeout, not a hang.
  stream.waitAllFinished(60s);
  // Checked before the join: a wait that a token ended returns early.
  EXPECT_TRUE(stream.allFinished());
  producer.join();
  std::vector<StreamEvent> got = stream.wait(0ms);
  ASSERT_EQ(got.size(), 102u);
  EXPECT_TRUE(got.back().finished);
}

} // namespace
