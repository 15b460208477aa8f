//===- ServingBenchTest.cpp - Workloads and the two batching policies -----===//
//
// Correctness of the benchmark machinery, never its timings: workloads are
// deterministic and within limits, both policies produce every output token
// a request asked for (static batching only loses what padding pushes past
// max-model-len, and says so), utilization is a fraction, and the JSON has
// the contract's keys.
//
//===----------------------------------------------------------------------===//

#include "runtime/Bench/ServingBench.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Bench/Metrics.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace folio;
using namespace folio::bench;

namespace {

WorkloadOptions smallWorkload() {
  WorkloadOptions w;
  w.numRequests = 24;
  w.seed = 7;
  w.maxModelLen = 64;
  w.vocabSize = 256;
  return w;
}

TEST(ServingBenchWorkload, DeterministicAndWithinLimits) {
  auto a = makeWorkload(smallWorkload());
  auto b = makeWorkload(smallWorkload());
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->size(), 24u);
  bool someLong = false;
  for (size_t i = 0; i < a->size(); ++i) {
    const BenchRequest &r = (*a)[i];
    EXPECT_EQ(r.prompt, (*b)[i].prompt);
    EXPECT_EQ(r.outputLength, (*b)[i].outputLength);
    EXPECT_GE(r.prompt.size(), 1u);
    EXPECT_GE(r.outputLength, 1u);
    EXPECT_LE(r.prompt.size() + r.outputLength, 64u);
    EXPECT_EQ(r.arrivalTime, 0.0);
    someLong |= r.prompt.size() > 12; // The tail: well past the median of 4.
    for (TokenId t : r.prompt)
      EXPECT_LT(t, 256);
  }
  EXPECT_TRUE(someLong) << "a long-tailed workload has some long prompts";
  WorkloadOptions other = smallWorkload();
  other.seed = 8;
  EXPECT_NE((*makeWorkload(other))[0].prompt, (*a)[0].prompt);
}

TEST(ServingBenchWorkload, PoissonArrivalsIncrease) {
  WorkloadOptions w = smallWorkload();
  w.requestRate = 50;
  auto requests = makeWorkload(w);
  ASSERT_TRUE(requests);
  for (size_t i = 1; i < requests->size(); ++i)
    EXPECT_GT((*requests)[i].arrivalTime, (*requests)[i - 1].arrivalTime);
}

TEST(ServingBenchWorkload, BadOptionsAreRefused) {
  WorkloadOptions w = smallWorkload();
  w.kind = "uniform";
  auto r = makeWorkload(w);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("supported: sharegpt-like"),
            std::string::npos);
  w = smallWorkload();
  w.maxModelLen = 1;
  EXPECT_FALSE(makeWorkload(w));
  w = smallWorkload();
  w.numRequests = 0;
  EXPECT_FALSE(makeWorkload(w));
}

TEST(ServingBenchMetrics, Percentiles) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 100), 4);
}

std::shared_ptr<const plan::Plan> llama() {
  mlir::folio::CompileToPlanOptions options;
  options.blockSize = 8;
  // The expected resident counts are sized for an f32 cache.
  options.kvCacheDtype = "f32";
  auto p = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", options);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return nullptr;
  }
  return std::make_shared<const plan::Plan>(std::move(*p));
}

TEST(ServingBench, BothPoliciesServeTheWholeWorkload) {
  auto plan = llama();
  ASSERT_TRUE(plan);
  auto work = makeWorkload(smallWorkload());
  ASSERT_TRUE(work);
  size_t asked = 0;
  for (const BenchRequest &r : *work)
    asked += r.outputLength;

  ExecutorFactory factory = [] { return exec::createCPUExecutor(); };
  ServingBenchOptions options;
  options.maxModelLen = 64;
  options.maxNumSeqs = 8;
  options.maxNumBatchedTokens = 64;
  // Two layers x K,V x 8 tokens x 2 heads x 8 dims x 4 bytes = 2 KiB a
  // block; 40 blocks = 5 static slots of 64 tokens.
  options.kvCacheMemory = 40 * 2048;

  auto continuous = runContinuous(plan, factory, *work, options);
  ASSERT_TRUE(continuous) << continuous.status().message();
  EXPECT_EQ(continuous->outputTokens, asked);
  EXPECT_GT(continuous->kvUtilizationPeak, 0.0);
  EXPECT_LE(continuous->kvUtilizationPeak, 1.0);
  EXPECT_LE(continuous->maxResidentSeqs, 8u);

  auto batched = runStatic(plan, factory, *work, options);
  ASSERT_TRUE(batched) << batched.status().message();
  EXPECT_EQ(batched->outputTokens + batched->truncatedTokens, asked);
  EXPECT_EQ(batched->maxResidentSeqs, 5u) << "KV budget / max-model-len";
  EXPECT_GT(batched->kvUtilizationPeak, 0.0);
  EXPECT_LE(batched->kvUtilizationPeak, 1.0);

  std::string json = toJson(&*continuous, &*batched);
  for (const char *key :
       {"\"continuous\"", "\"static\"", "\"ratio\"", "\"output_tokens_per_s\"",
        "\"requests_per_s\"", "\"ttft_ms\"", "\"tpot_ms\"", "\"p50\"",
        "\"p99\"", "\"kv_utilization\"", "\"mean\"", "\"peak\"",
        "\"preemptions\"", "\"max_resident_seqs\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  // One policy run: only its object, no ratio against a policy that did
  // not run.
  std::string one = toJson(&*continuous, nullptr);
  EXPECT_NE(one.find("\"continuous\""), std::string::npos);
  EXPECT_EQ(one.find("\"static\""), std::string::npos);
  EXPECT_EQ(one.find("\"ratio\""), std::string::npos);
  EXPECT_EQ(toJson(nullptr, &*batched).find("\"continuous\""),
            std::string::npos);
}

TEST(ServingBench, ConcurrencyLimitAndWarmup) {
  auto plan = llama();
  ASSERT_TRUE(plan);
  auto work = makeWorkload(smallWorkload());
  WorkloadOptions other = smallWorkload();
  other.seed = 8;
  auto warmup = makeWorkload(other);
  ASSERT_TRUE(work && warmup);
  ServingBenchOptions options;
  options.maxModelLen = 64;
  options.maxNumSeqs = 8;
  options.maxNumBatchedTokens = 64;
  options.kvCacheMemory = 40 * 2048;
  options.maxConcurrency = 3;

  std::vector<RequestTimes> times;
  auto m = runContinuous(
      plan, [] { return exec::createCPUExecutor(); }, *work, options, &times,
      &*warmup);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_LE(m->maxResidentSeqs, 3u) << "at most 3 requests in flight";
  // Only the timed workload is reported, every request whole.
  ASSERT_EQ(times.size(), work->size());
  std::vector<double> finishes;
  for (size_t i = 0; i < times.size(); ++i) {
    EXPECT_EQ(times[i].outputTokens, (*work)[i].outputLength) << i;
    EXPECT_EQ(times[i].promptTokens, (*work)[i].prompt.size()) << i;
    EXPECT_EQ(times[i].tokenTimes.size(), (*work)[i].outputLength) << i;
    EXPECT_LE(times[i].arrival, times[i].firstToken);
    EXPECT_LE(times[i].firstToken, times[i].finish);
    finishes.push_back(times[i].finish);
  }
  // Request i goes out when the (i - 3)-th finish frees its connection.
  std::sort(finishes.begin(), finishes.end());
  for (size_t i = 3; i < times.size(); ++i)
    EXPECT_GE(times[i].arrival, finishes[i - 3]) << i;
}

TEST(ServingBench, TooSmallBudgetIsRefused) {
  auto plan = llama();
  ASSERT_TRUE(plan);
  auto work = makeWorkload(smallWorkload());
  ServingBenchOptions options;
  options.maxModelLen = 64;
  options.kvCacheMemory = 2048; // One block: no 64-token slot.
  auto batched = runStatic(
      plan, [] { return exec::createCPUExecutor(); }, *work, options);
  ASSERT_FALSE(batched);
  EXPECT_NE(batched.status().message().find("no max-model-len slot"),
            std::string::npos);
}

} // namespace
