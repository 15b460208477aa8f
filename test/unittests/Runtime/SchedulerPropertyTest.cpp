//===- SchedulerPropertyTest.cpp - Random operations on the scheduler -----===//
//
// Random interleavings of add, abort, draft proposals and steps (which
// finish requests and, under memory pressure, preempt them), over random
// configurations, with every invariant checked after every operation: no
// leaked or double-freed block, reference counts equal to the number of
// block tables holding each block, free + held == usable. Aborting what is
// left must return every block.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/Runtime/FakeModel.h"

#include "runtime/Scheduler/Scheduler.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

using namespace folio;
using namespace folio::test;

namespace {

constexpr size_t kVocab = 32;

void fuzz(uint32_t seed, int numOps) {
  std::mt19937 rng(seed);
  SchedulerConfig config;
  config.maxModelLen = 64;
  config.maxNumSeqs = 1 + rng() % 8;
  config.enableChunkedPrefill = rng() % 4 != 0;
  config.maxNumBatchedTokens =
      config.enableChunkedPrefill ? 1 + rng() % 40 : 64 + rng() % 40;
  config.ordering =
      rng() % 2 ? OrderingPolicyKind::Fcfs : OrderingPolicyKind::Priority;
  config.capacity = rng() % 3 ? CapacityPolicyKind::MaxUtilization
                              : CapacityPolicyKind::GuaranteedNoEvict;
  config.eosTokenId = 31;
  config.vocabSize = kVocab;
  KVCacheConfig kv;
  kv.blockSize = 1 + rng() % 8;
  kv.numBlocks = (64 + kv.blockSize - 1) / kv.blockSize + 1 + rng() % 30;
  kv.enablePrefixCaching = rng() % 2;
  SCOPED_TRACE("seed " + std::to_string(seed) + " block size " +
               std::to_string(kv.blockSize) + " blocks " +
               std::to_string(kv.numBlocks));

  Expected<std::unique_ptr<Scheduler>> created = Scheduler::create(config, kv);
  ASSERT_TRUE(created) << created.status().message();
  Scheduler &scheduler = **created;
  FakeModel model(kv.numBlocks, kv.blockSize, kVocab);
  std::vector<TokenId> sharedPrefix(20);
  for (TokenId &t : sharedPrefix)
    t = static_cast<TokenId>(rng() % 30);

  std::set<RequestId> live;
  size_t nextId = 0, numFinished = 0, numAborted = 0;
  for (int op = 0; op < numOps; ++op) {
    unsigned choice = rng() % 10;
    if (choice < 2) {
      NewRequest r;
      r.requestId = "q" + std::to_string(nextId++);
      if (rng() % 2)
        r.promptTokenIds.assign(sharedPrefix.begin(),
                                sharedPrefix.begin() + rng() % 20);
      for (size_t n = 1 + rng() % 30; n > 0; --n)
        r.promptTokenIds.push_back(static_cast<TokenId>(rng() % kVocab));
      r.samplingParams.maxTokens = 1 + rng() % 20;
      r.samplingParams.temperature = rng() % 2 ? 0.0f : 1.0f;
      r.samplingParams.n =
          r.samplingParams.temperature > 0 && rng() % 4 == 0 ? 3 : 1;
      r.priority = static_cast<int32_t>(rng() % 3);
      // Some requests are refused (too long): that must change nothing.
      // For n > 1 the parent id stands for all samples.
      if (scheduler.addRequest(r).isOk())
        live.insert(r.requestId);
    } else if (choice < 3 && !live.empty()) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      if (scheduler.abortRequest(*it).isOk())
        ++numAborted;
      live.erase(it);
    } else if (choice < 4 && !live.empty()) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      std::vector<TokenId> drafts(rng() % 4);
      for (TokenId &t : drafts)
        t = static_cast<TokenId>(rng() % kVocab);
      (void)scheduler.setSpeculativeTokens(*it, drafts);
    } else {
      SchedulerOutput output = scheduler.schedule();
      ASSERT_LE(output.totalNumScheduledTokens, config.maxNumBatchedTokens);
      ASSERT_LE(output.numScheduledTokens.size(), config.maxNumSeqs);
      ASSERT_TRUE(scheduler.checkInvariants().isOk())
          << "after schedule, op " << op << ": "
          << scheduler.checkInvariants().message();
      ModelRunnerOutput result = model.execute(output);
      for (const RequestOutput &out :
           scheduler.updateFromOutput(output, result))
        numFinished += out.finished;
      for (const std::string &error : model.errors())
        FAIL() << "op " << op << ": " << error;
    }
    Status status = scheduler.checkInvariants();
    ASSERT_TRUE(status.isOk()) << "op " << op << ": " << status.message();
  }
  if (config.capacity == CapacityPolicyKind::GuaranteedNoEvict) {
    EXPECT_EQ(scheduler.numPreemptions(), 0u);
  }
  EXPECT_GT(numFinished, 0u);

  for (const RequestId &id : live)
    (void)scheduler.abortRequest(id);
  EXPECT_FALSE(scheduler.hasUnfinishedRequests());
  EXPECT_EQ(scheduler.kvCache().numFreeBlocks(),
            scheduler.kvCache().pool().numUsableBlocks());
  ASSERT_TRUE(scheduler.checkInvariants().isOk());
  (void)numAborted;
}

TEST(RuntimeSchedulerProperty, RandomOperationSequences) {
  for (uint32_t seed = 1; seed <= 10; ++seed)
    fuzz(seed, 1500);
}

TEST(RuntimeSchedulerProperty, RandomSequencesHitMemoryPressure) {
  // A config where preemption must happen, checked explicitly.
  SchedulerConfig config;
  config.maxModelLen = 40;
  config.maxNumBatchedTokens = 64;
  config.eosTokenId = 31;
  KVCacheConfig kv;
  kv.blockSize = 4;
  kv.numBlocks = 12;
  auto scheduler = std::move(*Scheduler::create(config, kv));
  FakeModel model(kv.numBlocks, kv.blockSize, kVocab);
  std::mt19937 rng(99);
  for (int i = 0; i < 30; ++i) {
    NewRequest r;
    r.requestId = "m" + std::to_string(i);
    r.promptTokenIds.assign(1 + rng() % 15, 1);
    r.samplingParams.maxTokens = 20;
    r.samplingParams.ignoreEos = true;
    ASSERT_TRUE(scheduler->addRequest(r));
  }
  for (int step = 0; step < 2000 && scheduler->hasUnfinishedRequests();
       ++step) {
    SchedulerOutput output = scheduler->schedule();
    scheduler->updateFromOutput(output, model.execute(output));
    ASSERT_TRUE(scheduler->checkInvariants().isOk());
  }
  EXPECT_FALSE(scheduler->hasUnfinishedRequests());
  EXPECT_GT(scheduler->numPreemptions(), 0u);
  EXPECT_TRUE(model.errors().empty());
  EXPECT_EQ(scheduler->kvCache().numFreeBlocks(), 11u);
}

} // namespace
