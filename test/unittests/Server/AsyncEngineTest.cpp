//===- AsyncEngineTest.cpp - The engine thread behind the server ----------===//
//
// On the bundled model: tokens streamed through the engine thread equal a
// direct run of the serving engine, whatever other threads submit at the
// same time; an abort from another thread ends the request and returns
// its blocks; a full queue refuses; drain lets admitted requests finish
// and refuses new ones; destruction aborts what is left.
//
//===----------------------------------------------------------------------===//

#include "runtime/Server/AsyncEngine.h"
#include "compiler/Plan/LowerToPlan.h"

#include <gtest/gtest.h>

#include <thread>

using namespace folio;
using namespace folio::server;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<const plan::Plan> bundled() {
  static std::shared_ptr<const plan::Plan> cached = [] {
    auto p = mlir::folio::compileONNXToPlan(
        std::string(FOLIO_SOURCE_DIR) + "/models/bundled/target.onnx", {});
    if (!p) {
      ADD_FAILURE() << llvm::toString(p.takeError());
      return std::shared_ptr<const plan::Plan>();
    }
    return std::make_shared<const plan::Plan>(std::move(*p));
  }();
  return cached;
}

std::unique_ptr<core::ServingEngine> makeEngine(size_t maxNumSeqs = 8,
                                                size_t numBlocks = 64) {
  SchedulerConfig config;
  config.maxModelLen = 512;
  config.maxNumSeqs = maxNumSeqs;
  config.vocabSize = 4096;
  config.eosTokenId = 0;
  KVCacheConfig kv;
  kv.numBlocks = numBlocks;
  kv.blockSize = size_t(bundled()->configValue("block_size", 16));
  auto engine = core::ServingEngine::create(
      bundled(), exec::createCPUExecutor(), config, kv);
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(*engine) : nullptr;
}

NewRequest request(const std::string &id, size_t maxTokens,
                   std::optional<uint64_t> seed = std::nullopt, int32_t n = 1) {
  NewRequest r;
  r.requestId = id;
  r.promptTokenIds = {101, 7, 300, 42, 9, 1000, 55};
  r.promptTokenIds.push_back(TokenId(200 + id.size()));
  r.samplingParams.maxTokens = maxTokens;
  r.samplingParams.ignoreEos = true;
  r.samplingParams.n = n;
  if (seed)
    r.samplingParams.seed = seed;
  else
    r.samplingParams.temperature = 0;
  return r;
}

struct Result {
  std::vector<std::vector<TokenId>> tokens;
  std::vector<FinishReason> reasons;
};

/// Reads `stream` until every sample ended (at most 60 s).
Result collect(RequestStream &stream) {
  Result r;
  r.tokens.resize(stream.numSamples());
  r.reasons.assign(stream.numSamples(), FinishReason::None);
  size_t ended = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (ended < stream.numSamples() &&
         std::chrono::steady_clock::now() < deadline)
    for (StreamEvent &e : stream.wait(100ms)) {
      auto &tokens = r.tokens[e.sample];
      tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
      if (e.finished) {
        r.reasons[e.sample] = e.finishReason;
        ++ended;
      }
    }
  EXPECT_EQ(ended, stream.numSamples()) << "request " << stream.id();
  return r;
}

/// Reads `stream` until `sample` ended (at most 30 s); how it ended.
FinishReason waitForEnd(RequestStream &stream, size_t sample) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline)
    for (StreamEvent &e : stream.wait(100ms))
      if (e.finished && e.sample == sample)
        return e.finishReason;
  ADD_FAILURE() << "sample " << sample << " of " << stream.id()
                << " did not end";
  return FinishReason::None;
}

/// What the engine generates for `r` on its own, without the thread.
std::map<RequestId, std::vector<TokenId>> direct(const NewRequest &r) {
  auto engine = makeEngine();
  EXPECT_TRUE(engine->addRequest(r));
  std::map<RequestId, std::vector<TokenId>> out;
  EXPECT_TRUE(engine->runToCompletion([&](const RequestOutput &o) {
    auto &t = out[o.requestId];
    t.insert(t.end(), o.newTokenIds.begin(), o.newTokenIds.end());
  }));
  return out;
}

/// Waits (at most 5 s) until the gauges show no running request and no
/// held block.
bool waitForIdleGauges(const ServerMetrics &metrics) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    EngineGauges g = metrics.engineGauges();
    if (g.kvBlocksUsed == 0 && g.numRunning == 0 && g.numWaiting == 0)
      return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

TEST(AsyncEngine, StreamsWhatTheEngineGenerates) {
  auto metrics = std::make_shared<ServerMetrics>();
  AsyncEngine engine(makeEngine(), metrics);
  NewRequest r = request("greedy", 12);
  auto stream = engine.submit(r);
  ASSERT_TRUE(stream) << stream.status().message();
  Result got = collect(**stream);
  EXPECT_EQ(got.reasons[0], FinishReason::Length);
  EXPECT_EQ(got.tokens[0], direct(r)["greedy"]);
  EXPECT_EQ(engine.numInFlight(), 0u);
  EXPECT_EQ(metrics->numFinished(FinishReason::Length), 1u);
  EXPECT_TRUE(waitForIdleGauges(*metrics));
}

TEST(AsyncEngine, ConcurrentSubmittersEachGetTheirOwnTokens) {
  // One sequence at a time: what is tested is that each submitter gets its
  // own stream, not that logits are bitwise the same in any batch (they
  // are not: a prefill of many rows runs oneDNN's GEMM where one request's
  // eight rows run the GEMV, and a seeded draw that lands next to the
  // boundary between two tokens then picks the neighbour).
  AsyncEngine engine(makeEngine(/*maxNumSeqs=*/1), nullptr);
  constexpr int kThreads = 6;
  std::vector<Result> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto stream =
          engine.submit(request("r" + std::string(size_t(t), 'x'), 10, 7 + t));
      ASSERT_TRUE(stream) << stream.status().message();
      results[size_t(t)] = collect(**stream);
    });
  for (std::thread &t : threads)
    t.join();
  // Seeded draws are keyed by (seed, position): a request alone generates
  // what it generates in any batch.
  for (int t = 0; t < kThreads; ++t) {
    std::string id = "r" + std::string(size_t(t), 'x');
    EXPECT_EQ(results[size_t(t)].tokens[0], direct(request(id, 10, 7 + t))[id])
        << id;
  }
}

TEST(AsyncEngine, ParallelSamplesStreamSeparately) {
  AsyncEngine engine(makeEngine(), nullptr);
  NewRequest r = request("par", 8, 3, /*n=*/3);
  auto stream = engine.submit(r);
  ASSERT_TRUE(stream);
  Result got = collect(**stream);
  auto want = direct(r);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got.tokens[i], want["par#" + std::to_string(i)]) << i;
    EXPECT_EQ(got.reasons[i], FinishReason::Length);
  }
  EXPECT_NE(got.tokens[0], got.tokens[1]);
  EXPECT_EQ(engine.numInFlight(), 0u);
}

TEST(AsyncEngine, AbortFromAnotherThreadFreesTheBlocks) {
  auto metrics = std::make_shared<ServerMetrics>();
  AsyncEngine engine(makeEngine(), metrics);
  // As long as the model allows (512 - 8 prompt tokens), so that the
  // request is still running when a loaded machine gets to the abort.
  auto stream = engine.submit(request("long", 480, 1, /*n=*/2));
  ASSERT_TRUE(stream);
  // Wait for tokens, so that the request holds blocks when aborted.
  size_t seen = 0;
  for (int i = 0; i < 600 && seen == 0; ++i)
    for (StreamEvent &e : (*stream)->wait(100ms))
      seen += e.tokens.size();
  ASSERT_GT(seen, 0u);
  EXPECT_GT(metrics->engineGauges().kvBlocksUsed, 0u);
  std::thread([&] { engine.abort("long"); }).join();
  Result rest = collect(**stream);
  EXPECT_EQ(rest.reasons[0], FinishReason::Abort);
  EXPECT_EQ(rest.reasons[1], FinishReason::Abort);
  EXPECT_LT(seen + rest.tokens[0].size() + rest.tokens[1].size(), 960u);
  EXPECT_TRUE(waitForIdleGauges(*metrics));
  EXPECT_EQ(engine.numInFlight(), 0u);
  EXPECT_EQ(metrics->numFinished(FinishReason::Abort), 2u);
  // Aborting again, or an unknown id, changes nothing.
  engine.abort("long");
  engine.abort("nobody");
  auto next = engine.submit(request("after", 4));
  ASSERT_TRUE(next);
  EXPECT_EQ(collect(**next).reasons[0], FinishReason::Length);
}

TEST(AsyncEngine, AbortOneSampleWithAReason) {
  auto metrics = std::make_shared<ServerMetrics>();
  AsyncEngine engine(makeEngine(), metrics);
  // Sample 0 must still run after sample 1's end: the longest request the
  // model allows gives a loaded machine time.
  auto stream = engine.submit(request("two", 480, 5, /*n=*/2));
  ASSERT_TRUE(stream);
  // A stop string found by the server ends one sample as "stop".
  engine.abort("two#1", FinishReason::Stop);
  EXPECT_EQ(waitForEnd(**stream, 1), FinishReason::Stop);
  EXPECT_FALSE((*stream)->sampleFinished(0));
  EXPECT_EQ(engine.numInFlight(), 1u);
  engine.abort("two");
  EXPECT_EQ(waitForEnd(**stream, 0), FinishReason::Abort);
  EXPECT_EQ(metrics->numFinished(FinishReason::Stop), 1u);
  EXPECT_EQ(metrics->numFinished(FinishReason::Abort), 1u);
  EXPECT_EQ(engine.numInFlight(), 0u);
}

TEST(AsyncEngine, FullQueueRefuses) {
  AsyncEngineOptions options;
  options.maxQueuedRequests = 1;
  AsyncEngine engine(makeEngine(/*maxNumSeqs=*/1), nullptr, options);
  auto first = engine.submit(request("a", 400));
  ASSERT_TRUE(first);
  auto second = engine.submit(request("b", 400));
  ASSERT_TRUE(second);
  auto third = engine.submit(request("c", 4));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(third.status().message().find("admits at most 2"),
            std::string::npos)
      << third.status().message();
  engine.abort("a");
  collect(**first);
  auto fourth = engine.submit(request("d", 4));
  EXPECT_TRUE(fourth) << fourth.status().message();
  engine.abort("b");
}

// Tests that a batch is admitted whole or not at all: one that could never
// fit is InvalidArgument, one that does not fit now is ResourceExhausted
// with nothing of it queued, and one the engine refuses a request of has
// the others aborted.
TEST(AsyncEngine, BatchesAreAdmittedWholeOrNotAtAll) {
  AsyncEngineOptions options;
  options.maxQueuedRequests = 1;
  auto metrics = std::make_shared<ServerMetrics>();
  AsyncEngine engine(makeEngine(/*maxNumSeqs=*/2), metrics, options);
  ASSERT_EQ(engine.maxInFlight(), 3u);
  std::vector<NewRequest> never;
  never.push_back(request("n1", 4, 1, /*n=*/2));
  never.push_back(request("n2", 4, 2, /*n=*/2));
  auto tooMany = engine.submitAll(std::move(never));
  ASSERT_FALSE(tooMany);
  EXPECT_EQ(tooMany.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(tooMany.status().message().find(
                "this batch of 2 prompts needs 4 sequences at once"),
            std::string::npos)
      << tooMany.status().message();

  auto running = engine.submit(request("run", 400));
  ASSERT_TRUE(running);
  std::vector<NewRequest> later;
  later.push_back(request("l1", 4));
  later.push_back(request("l2", 4));
  later.push_back(request("l3", 4));
  auto full = engine.submitAll(std::move(later));
  ASSERT_FALSE(full);
  EXPECT_EQ(full.status().code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(engine.numInFlight(), 1u) << "nothing of the batch was queued";

  std::vector<NewRequest> mixed;
  mixed.push_back(request("ok", 400));
  mixed.push_back(request("bad", 4));
  mixed.back().promptTokenIds.push_back(5000); // outside the vocabulary
  size_t which = 0;
  auto refused = engine.submitAll(std::move(mixed), &which);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(which, 1u);
  // "ok" (400 tokens) was admitted, then aborted; "run" still runs.
  for (int i = 0; i < 2000 && metrics->numFinished(FinishReason::Abort) == 0;
       ++i)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(metrics->numFinished(FinishReason::Abort), 1u);
  EXPECT_EQ(metrics->numFinished(FinishReason::Length), 0u);
  engine.abort("run");
  for (int i = 0; i < 2000 && engine.numInFlight() > 0; ++i)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(engine.numInFlight(), 0u);
  std::vector<NewRequest> fits;
  fits.push_back(request("f1", 4));
  fits.push_back(request("f2", 4));
  auto both = engine.submitAll(std::move(fits));
  ASSERT_TRUE(both) << both.status().message();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0]->id(), "f1");
  EXPECT_EQ((*both)[1]->id(), "f2");
  for (const auto &s : *both)
    EXPECT_EQ(collect(*s).tokens[0].size(), 4u);
}

TEST(AsyncEngine, EngineRefusalsComeBackFromSubmit) {
  AsyncEngine engine(makeEngine(), nullptr);
  NewRequest r = request("bad", 4);
  r.promptTokenIds.push_back(5000); // outside the 4096-token vocabulary
  auto refused = engine.submit(r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(refused.status().message().find("outside the vocabulary"),
            std::string::npos);
  EXPECT_EQ(engine.numInFlight(), 0u);
  auto ok = engine.submit(request("dup", 30));
  ASSERT_TRUE(ok);
  auto dup = engine.submit(request("dup", 30));
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.status().code(), StatusCode::AlreadyExists);
  collect(**ok);
}

TEST(AsyncEngine, DrainFinishesAdmittedRequestsThenStops) {
  auto metrics = std::make_shared<ServerMetrics>();
  AsyncEngine engine(makeEngine(/*maxNumSeqs=*/2), metrics);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 3; ++i) {
    auto s = engine.submit(request("d" + std::string(size_t(i), 'x'), 20));
    ASSERT_TRUE(s);
    streams.push_back(*s);
  }
  std::thread drainer([&] { engine.drainAndStop(); });
  drainer.join();
  EXPECT_TRUE(engine.isDraining());
  for (auto &s : streams) {
    Result r = collect(*s);
    EXPECT_EQ(r.reasons[0], FinishReason::Length);
    EXPECT_EQ(r.tokens[0].size(), 20u);
  }
  auto late = engine.submit(request("late", 4));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.status().code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(metrics->numFinished(FinishReason::Length), 3u);
  engine.drainAndStop(); // idempotent
}

TEST(AsyncEngine, DestructionAbortsWhatIsLeft) {
  std::shared_ptr<RequestStream> stream;
  {
    AsyncEngine engine(makeEngine(), nullptr);
    auto s = engine.submit(request("left", 400));
    ASSERT_TRUE(s);
    stream = *s;
  }
  Result r = collect(*stream);
  EXPECT_EQ(r.reasons[0], FinishReason::Abort);
  EXPECT_LT(r.tokens[0].size(), 400u);
}

} // namespace
