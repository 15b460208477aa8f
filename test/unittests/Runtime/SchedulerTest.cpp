//===- SchedulerTest.cpp - Scheduling decisions step by step --------------===//

#include "runtime/Scheduler/Scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace folio;

namespace {

KVCacheConfig kvConfig(size_t numBlocks, bool caching = false) {
  KVCacheConfig c;
  c.numBlocks = numBlocks;
  c.blockSize = 4;
  c.enablePrefixCaching = caching;
  return c;
}

SchedulerConfig schedConfig(size_t budget, size_t maxModelLen = 64) {
  SchedulerConfig c;
  c.maxNumBatchedTokens = budget;
  c.maxModelLen = maxModelLen;
  c.maxNumSeqs = 8;
  c.eosTokenId = 99;
  return c;
}

std::unique_ptr<Scheduler> make(const SchedulerConfig &config,
                                const KVCacheConfig &kv) {
  Expected<std::unique_ptr<Scheduler>> created = Scheduler::create(config, kv);
  EXPECT_TRUE(created) << created.status().message();
  return std::move(*created);
}

NewRequest request(const RequestId &id, size_t promptLen,
                   std::optional<size_t> maxTokens = 10) {
  NewRequest r;
  r.requestId = id;
  r.promptTokenIds.resize(promptLen);
  std::iota(r.promptTokenIds.begin(), r.promptTokenIds.end(), 1);
  r.samplingParams.temperature = 0;
  r.samplingParams.maxTokens = maxTokens;
  return r;
}

/// Answers every row that needs a token with `token`.
ModelRunnerOutput answer(const Scheduler &scheduler,
                         const SchedulerOutput &output, TokenId token = 7) {
  ModelRunnerOutput result;
  for (const auto &[id, count] : output.numScheduledTokens) {
    const Request *r = scheduler.findRequest(id);
    if (r && r->numComputedTokens >= r->numTokens())
      result.outputs.push_back({id, {token}, {}});
  }
  return result;
}

size_t scheduledFor(const SchedulerOutput &output, const RequestId &id) {
  auto it = output.numScheduledTokens.find(id);
  return it == output.numScheduledTokens.end() ? 0 : it->second;
}

/// One engine step with a constant-token model.
std::vector<RequestOutput> step(Scheduler &scheduler, SchedulerOutput &output,
                                TokenId token = 7) {
  output = scheduler.schedule();
  std::vector<RequestOutput> news =
      scheduler.updateFromOutput(output, answer(scheduler, output, token));
  EXPECT_TRUE(scheduler.checkInvariants().isOk())
      << scheduler.checkInvariants().message();
  return news;
}

// A runner error finishes that request alone, the way an abort does: its
// blocks are freed in the same update and the runner hears of it next step.
TEST(RuntimeScheduler, RunnerErrorFinishesOnlyThatRequest) {
  auto scheduler = make(schedConfig(64), kvConfig(64));
  size_t freeBefore = scheduler->kvCache().numFreeBlocks();
  ASSERT_TRUE(scheduler->addRequest(request("a", 6)));
  ASSERT_TRUE(scheduler->addRequest(request("bad", 9)));
  SchedulerOutput out = scheduler->schedule();
  size_t freeWithA = freeBefore - scheduler->kvCache().blockIds("a").size();
  ModelRunnerOutput result = answer(*scheduler, out);
  for (RunnerRequestOutput &r : result.outputs)
    if (r.requestId == "bad") {
      r.sampledTokenIds.clear();
      r.error = "logits of request 'bad' hold NaN";
    }
  std::vector<RequestOutput> news = scheduler->updateFromOutput(out, result);
  ASSERT_EQ(news.size(), 2u);
  for (const RequestOutput &n : news) {
    if (n.requestId == "bad") {
      EXPECT_TRUE(n.finished);
      EXPECT_EQ(n.finishReason, FinishReason::Error);
      EXPECT_EQ(n.error, "logits of request 'bad' hold NaN");
      EXPECT_TRUE(n.newTokenIds.empty());
    } else {
      EXPECT_FALSE(n.finished);
      EXPECT_EQ(n.newTokenIds, std::vector<TokenId>{7});
    }
  }
  EXPECT_EQ(scheduler->findRequest("bad"), nullptr);
  EXPECT_EQ(scheduler->kvCache().numFreeBlocks(), freeWithA);
  EXPECT_TRUE(scheduler->checkInvariants());
  out = scheduler->schedule();
  EXPECT_EQ(out.finishedRequestIds, std::vector<RequestId>{"bad"});
  EXPECT_EQ(scheduledFor(out, "a"), 1u);
}

TEST(RuntimeScheduler, ChunkedPrefillSplitsALongPrompt) {
  auto scheduler = make(schedConfig(8), kvConfig(64));
  ASSERT_TRUE(scheduler->addRequest(request("a", 20, 2)));
  SchedulerOutput out;
  std::vector<size_t> chunks;
  std::vector<size_t> tokensOut;
  while (scheduler->hasUnfinishedRequests()) {
    std::vector<RequestOutput> news = step(*scheduler, out);
    chunks.push_back(scheduledFor(out, "a"));
    tokensOut.push_back(news.empty() ? 0 : news[0].newTokenIds.size());
  }
  EXPECT_EQ(chunks, (std::vector<size_t>{8, 8, 4, 1}));
  EXPECT_EQ(tokensOut, (std::vector<size_t>{0, 0, 1, 1}));
  EXPECT_EQ(out.scheduledCachedRequests.size(), 1u);
}

TEST(RuntimeScheduler, RunningRequestsGoFirstThenPrefillChunks) {
  auto scheduler = make(schedConfig(8), kvConfig(64));
  ASSERT_TRUE(scheduler->addRequest(request("a", 3)));
  SchedulerOutput out;
  step(*scheduler, out); // a's prompt; a now decodes.
  ASSERT_TRUE(scheduler->addRequest(request("b", 20)));
  ASSERT_TRUE(scheduler->addRequest(request("c", 5)));
  step(*scheduler, out);
  EXPECT_EQ(scheduledFor(out, "a"), 1u);
  EXPECT_EQ(scheduledFor(out, "b"), 7u);
  EXPECT_EQ(scheduledFor(out, "c"), 0u);
  EXPECT_EQ(out.totalNumScheduledTokens, 8u);
  ASSERT_EQ(out.scheduledNewRequests.size(), 1u);
  EXPECT_EQ(out.scheduledNewRequests[0].requestId, "b");
  // The half-done prompt now runs, as a diff, before the waiting one.
  step(*scheduler, out);
  EXPECT_EQ(scheduledFor(out, "a"), 1u);
  EXPECT_EQ(scheduledFor(out, "b"), 7u);
  ASSERT_EQ(out.scheduledCachedRequests.size(), 2u);
  EXPECT_TRUE(out.scheduledNewRequests.empty());
}

TEST(RuntimeScheduler, WithoutChunkingAPromptWaitsUntilItFitsWhole) {
  SchedulerConfig config = schedConfig(16, 16);
  config.enableChunkedPrefill = false;
  auto scheduler = make(config, kvConfig(64));
  ASSERT_TRUE(scheduler->addRequest(request("a", 3, 10)));
  ASSERT_TRUE(scheduler->addRequest(request("b", 14, 2)));
  SchedulerOutput out;
  step(*scheduler, out);
  EXPECT_EQ(scheduledFor(out, "a"), 3u);
  EXPECT_EQ(scheduledFor(out, "b"), 0u);
  step(*scheduler, out); // 1 + 14 fits in 16.
  EXPECT_EQ(scheduledFor(out, "a"), 1u);
  EXPECT_EQ(scheduledFor(out, "b"), 14u);
}

TEST(RuntimeScheduler, MaxNumSeqsLimitsRunningRequests) {
  SchedulerConfig config = schedConfig(64);
  config.maxNumSeqs = 2;
  auto scheduler = make(config, kvConfig(64));
  for (const char *id : {"a", "b", "c"})
    ASSERT_TRUE(scheduler->addRequest(request(id, 2, 2)));
  SchedulerOutput out;
  step(*scheduler, out);
  EXPECT_EQ(out.numScheduledTokens.size(), 2u);
  EXPECT_EQ(scheduler->numRunning(), 2u);
  EXPECT_EQ(scheduler->numWaiting(), 1u);
  step(*scheduler, out); // a and b finish (max_tokens 2).
  step(*scheduler, out);
  EXPECT_EQ(scheduledFor(out, "c"), 2u);
}

TEST(RuntimeScheduler, RefusesBadRequestsWithoutHurtingOthers) {
  auto scheduler = make(schedConfig(16, 32), kvConfig(64));
  ASSERT_TRUE(scheduler->addRequest(request("ok", 4, 4)));
  Status tooLong = scheduler->addRequest(request("long", 30, 8));
  ASSERT_FALSE(tooLong);
  EXPECT_EQ(tooLong.code(), StatusCode::InvalidArgument);
  EXPECT_NE(tooLong.message().find("maximum context length is 32"),
            std::string::npos)
      << tooLong.message();
  EXPECT_FALSE(scheduler->addRequest(request("full", 32, std::nullopt)));
  EXPECT_EQ(scheduler->addRequest(request("ok", 4)).code(),
            StatusCode::AlreadyExists);
  EXPECT_FALSE(scheduler->addRequest(request("empty", 0)));
  NewRequest bad = request("bad", 4);
  bad.samplingParams.topP = 2;
  Status badStatus = scheduler->addRequest(bad);
  EXPECT_NE(badStatus.message().find("top_p"), std::string::npos);
  EXPECT_EQ(scheduler->findRequest("long"), nullptr);
  EXPECT_EQ(scheduler->numWaiting(), 1u);

  SchedulerOutput out;
  std::vector<TokenId> tokens;
  while (scheduler->hasUnfinishedRequests())
    for (const RequestOutput &news : step(*scheduler, out))
      tokens.insert(tokens.end(), news.newTokenIds.begin(),
                    news.newTokenIds.end());
  EXPECT_EQ(tokens.size(), 4u);
}

TEST(RuntimeScheduler, UnsetMaxTokensRunsToTheContextLength) {
  auto scheduler = make(schedConfig(16, 12), kvConfig(64));
  ASSERT_TRUE(scheduler->addRequest(request("a", 5, std::nullopt)));
  SchedulerOutput out;
  size_t generated = 0;
  RequestOutput last;
  while (scheduler->hasUnfinishedRequests())
    for (RequestOutput &news : step(*scheduler, out)) {
      generated += news.newTokenIds.size();
      last = news;
    }
  EXPECT_EQ(generated, 7u);
  EXPECT_EQ(last.finishReason, FinishReason::Length);
}

TEST(RuntimeScheduler, AbortFreesBlocksAtOnce) {
  auto scheduler = make(schedConfig(32, 48), kvConfig(16));
  ASSERT_TRUE(scheduler->addRequest(request("a", 20)));
  ASSERT_TRUE(scheduler->addRequest(request("w", 30)));
  SchedulerOutput out;
  step(*scheduler, out);
  size_t usable = scheduler->kvCache().pool().numUsableBlocks();
  EXPECT_LT(scheduler->kvCache().numFreeBlocks(), usable);
  ASSERT_TRUE(scheduler->abortRequest("a"));
  ASSERT_TRUE(scheduler->abortRequest("w"));
  EXPECT_EQ(scheduler->kvCache().numFreeBlocks(), usable);
  EXPECT_FALSE(scheduler->hasUnfinishedRequests());
  EXPECT_EQ(scheduler->abortRequest("a").code(), StatusCode::NotFound);
  // The executor hears about it with the next step.
  out = scheduler->schedule();
  EXPECT_EQ(out.finishedRequestIds, (std::vector<RequestId>{"a", "w"}));
  EXPECT_TRUE(out.empty());
}

TEST(RuntimeScheduler, PreemptsTheNewestAndResumesItWithItsOutput) {
  // 6 usable blocks of 4 tokens; two requests of 8 tokens grow into them.
  auto scheduler = make(schedConfig(32, 24), kvConfig(7));
  ASSERT_TRUE(scheduler->addRequest(request("old", 8, 12)));
  ASSERT_TRUE(scheduler->addRequest(request("new", 8, 12)));
  SchedulerOutput out;
  bool preempted = false;
  std::vector<TokenId> newOutput;
  while (scheduler->hasUnfinishedRequests()) {
    std::vector<RequestOutput> news = step(*scheduler, out);
    for (const RequestOutput &n : news)
      if (n.requestId == "new")
        newOutput.insert(newOutput.end(), n.newTokenIds.begin(),
                         n.newTokenIds.end());
    if (!out.preemptedRequestIds.empty()) {
      EXPECT_EQ(out.preemptedRequestIds, (std::vector<RequestId>{"new"}));
      EXPECT_EQ(scheduledFor(out, "new"), 0u);
      EXPECT_EQ(scheduledFor(out, "old"), 1u);
      EXPECT_TRUE(out.scheduledNewRequests.empty());
      preempted = true;
    }
    for (const NewRequestData &data : out.scheduledNewRequests)
      if (data.requestId == "new" && preempted) {
        // Resumed: prompt and generated tokens, recomputed from scratch.
        EXPECT_FALSE(data.outputTokenIds.empty());
        EXPECT_EQ(data.numComputedTokens, 0u);
        EXPECT_EQ(scheduledFor(out, "new"), 8 + data.outputTokenIds.size());
      }
  }
  EXPECT_TRUE(preempted);
  EXPECT_EQ(newOutput.size(), 12u);
  EXPECT_GE(scheduler->numPreemptions(), 1u);
}

TEST(RuntimeScheduler, StopConditions) {
  auto scheduler = make(schedConfig(64), kvConfig(64));
  NewRequest eos = request("eos", 2);
  NewRequest ignore = request("ignore", 2, 3);
  ignore.samplingParams.ignoreEos = true;
  NewRequest stop = request("stop", 2);
  stop.samplingParams.stopTokenIds = {99, 5};
  for (const NewRequest &r : {eos, ignore, stop})
    ASSERT_TRUE(scheduler->addRequest(r));
  SchedulerOutput out;
  std::map<RequestId, RequestOutput> finished;
  for (int i = 0; i < 5 && scheduler->hasUnfinishedRequests(); ++i)
    for (RequestOutput &news : step(*scheduler, out, /*token=*/99))
      if (news.finished)
        finished[news.requestId] = news;
  ASSERT_EQ(finished.size(), 3u);
  EXPECT_EQ(finished["eos"].finishReason, FinishReason::Stop);
  EXPECT_FALSE(finished["eos"].stopTokenId);
  EXPECT_EQ(finished["ignore"].finishReason, FinishReason::Length);
  EXPECT_EQ(finishReasonName(finished["ignore"].finishReason),
            std::string("length"));
  // With EOS among the stop tokens, EOS is reported first.
  EXPECT_EQ(finished["stop"].finishReason, FinishReason::Stop);

  NewRequest stop5 = request("stop5", 2);
  stop5.samplingParams.stopTokenIds = {5};
  ASSERT_TRUE(scheduler->addRequest(stop5));
  std::vector<RequestOutput> news = step(*scheduler, out, /*token=*/5);
  ASSERT_EQ(news.size(), 1u);
  EXPECT_TRUE(news[0].finished);
  EXPECT_EQ(news[0].stopTokenId, std::optional<TokenId>(5));
  EXPECT_EQ(news[0].newTokenIds, (std::vector<TokenId>{5}));
}

TEST(RuntimeScheduler, RejectedDraftTokensAreRolledBack) {
  auto scheduler = make(schedConfig(64), kvConfig(64));
  ASSERT_TRUE(scheduler->addRequest(request("a", 6, 20)));
  SchedulerOutput out;
  step(*scheduler, out);
  ASSERT_TRUE(scheduler->setSpeculativeTokens("a", {11, 12, 13}));
  out = scheduler->schedule();
  EXPECT_EQ(scheduledFor(out, "a"), 4u);
  EXPECT_EQ(out.scheduledSpecDecodeTokens.at("a"),
            (std::vector<TokenId>{11, 12, 13}));
  // One draft accepted, then a correction: two tokens, two rejected.
  ModelRunnerOutput result;
  result.outputs.push_back({"a", {11, 42}, {}});
  std::vector<RequestOutput> news = scheduler->updateFromOutput(out, result);
  ASSERT_EQ(news.size(), 1u);
  EXPECT_EQ(news[0].newTokenIds, (std::vector<TokenId>{11, 42}));
  const Request *a = scheduler->findRequest("a");
  EXPECT_EQ(a->numTokens(), 9u);
  EXPECT_EQ(a->numComputedTokens, 8u);
  EXPECT_TRUE(a->specTokenIds.empty());
  EXPECT_TRUE(scheduler->checkInvariants().isOk());
  // Drafts are cut to what the request may still generate.
  ASSERT_TRUE(
      scheduler->setSpeculativeTokens("a", std::vector<TokenId>(40, 1)));
  EXPECT_EQ(a->specTokenIds.size(), 26u - 9u);
  EXPECT_FALSE(scheduler->setSpeculativeTokens("zzz", {1}));
}

TEST(RuntimeScheduler, ParallelSamplesShareThePromptBlocks) {
  auto scheduler = make(schedConfig(64), kvConfig(64));
  NewRequest r = request("p", 18, 4);
  r.samplingParams.temperature = 1;
  r.samplingParams.n = 3;
  r.samplingParams.seed = 5;
  ASSERT_TRUE(scheduler->addRequest(r));
  EXPECT_EQ(scheduler->addRequest(r).code(), StatusCode::AlreadyExists);
  SchedulerOutput out;
  step(*scheduler, out);
  // The first sample computes the prompt; the others wait one step.
  EXPECT_EQ(out.numScheduledTokens.size(), 1u);
  EXPECT_EQ(scheduledFor(out, "p#0"), 18u);
  out = scheduler->schedule();
  EXPECT_EQ(scheduledFor(out, "p#1"), 2u);
  EXPECT_EQ(scheduledFor(out, "p#2"), 2u);
  const std::vector<BlockId> &first = scheduler->kvCache().blockIds("p#0");
  const std::vector<BlockId> &second = scheduler->kvCache().blockIds("p#1");
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first[i], second[i]);
    EXPECT_EQ(scheduler->kvCache().pool().block(first[i]).refCount, 3);
  }
  EXPECT_NE(first[4], second[4]);
  EXPECT_EQ(scheduler->findRequest("p#2")->seed, 7u);
  EXPECT_TRUE(scheduler->checkInvariants().isOk());
  // Aborting the parent id aborts every sample.
  ASSERT_TRUE(scheduler->abortRequest("p"));
  EXPECT_FALSE(scheduler->hasUnfinishedRequests());
  EXPECT_EQ(scheduler->kvCache().numFreeBlocks(),
            scheduler->kvCache().pool().numUsableBlocks());
}

TEST(RuntimeScheduler, PriorityPolicyAdmitsAndPreemptsByPriority) {
  SchedulerConfig config = schedConfig(64, 24);
  config.ordering = OrderingPolicyKind::Priority;
  config.maxNumSeqs = 1;
  auto scheduler = make(config, kvConfig(64));
  NewRequest low = request("low", 4, 2), high = request("high", 4, 2);
  low.priority = 5;
  high.priority = 1;
  ASSERT_TRUE(scheduler->addRequest(low));
  ASSERT_TRUE(scheduler->addRequest(high));
  SchedulerOutput out = scheduler->schedule();
  EXPECT_EQ(scheduledFor(out, "high"), 4u);
  EXPECT_EQ(scheduledFor(out, "low"), 0u);
}

TEST(RuntimeScheduler, GuaranteedNoEvictAdmitsOnlyWhatCanFinish) {
  SchedulerConfig config = schedConfig(64, 24);
  config.capacity = CapacityPolicyKind::GuaranteedNoEvict;
  // 10 usable blocks; each request may grow to 4 + 16 = 20 tokens = 5.
  auto scheduler = make(config, kvConfig(11));
  for (const char *id : {"a", "b", "c"})
    ASSERT_TRUE(scheduler->addRequest(request(id, 4, 16)));
  SchedulerOutput out = scheduler->schedule();
  EXPECT_EQ(out.numScheduledTokens.size(), 2u);
  EXPECT_EQ(scheduledFor(out, "c"), 0u);
}

TEST(RuntimeScheduler, ConfigAndPolicyValidation) {
  SchedulerConfig config = schedConfig(8, 64);
  EXPECT_TRUE(config.validate(kvConfig(64)));
  // 64 tokens need 16 blocks; 10 usable.
  Status status = config.validate(kvConfig(11));
  EXPECT_NE(status.message().find("max-model-len"), std::string::npos);
  EXPECT_FALSE(Scheduler::create(config, kvConfig(11)));
  config.enableChunkedPrefill = false;
  EXPECT_FALSE(config.validate(kvConfig(64)));
  config = schedConfig(0);
  EXPECT_FALSE(config.validate(kvConfig(64)));

  EXPECT_EQ(*parseOrderingPolicy("priority"), OrderingPolicyKind::Priority);
  EXPECT_EQ(*parseCapacityPolicy("guaranteed-no-evict"),
            CapacityPolicyKind::GuaranteedNoEvict);
  EXPECT_FALSE(parseOrderingPolicy("lifo"));
  EXPECT_NE(parseCapacityPolicy("x").status().message().find("max-utilization"),
            std::string::npos);
}

} // namespace
