//===- ServingBench.cpp - Continuous vs static batching -------------------===//

#include "runtime/Bench/ServingBench.h"

#include "runtime/Bench/Metrics.h"
#include "runtime/Core/Engine.h"
#include "runtime/Core/ServingEngine.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace folio::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void waitUntil(Clock::time_point start, double t) {
  double now = since(start);
  if (t > now)
    std::this_thread::sleep_for(std::chrono::duration<double>(t - now));
}

/// The executor's KV geometry, from a throwaway load of the plan.
Expected<exec::KVCacheLayout> layoutOf(std::shared_ptr<const plan::Plan> plan,
                                       const ExecutorFactory &makeExecutor) {
  std::unique_ptr<exec::Executor> probe = makeExecutor();
  if (Status s = probe->load(std::move(plan)); !s)
    return s;
  exec::KVCacheLayout layout = probe->kvCacheLayout();
  if (layout.bytesPerBlock <= 0 || layout.blockSize <= 0)
    return Status::invalidArgument("the plan has no KV cache");
  return layout;
}

TokenId argmax(const float *row, int64_t vocab) {
  return TokenId(std::max_element(row, row + vocab) - row);
}

/// Sends `work` through `engine` as it arrives (request ids from
/// `firstId` on) and times it; fills the throughput and latency fields of
/// `m` and each request's `times`.
Status drive(core::ServingEngine &engine, const std::vector<BenchRequest> &work,
             const ServingBenchOptions &options, size_t firstId,
             PolicyMetrics &m, std::vector<RequestTimes> &times) {
  times.assign(work.size(), RequestTimes());
  UtilizationTracker utilization;
  const Scheduler &scheduler = engine.getScheduler();
  uint64_t preemptionsBefore = scheduler.numPreemptions();
  size_t hitsBefore = scheduler.kvCache().numPrefixHitTokens();
  size_t next = 0;
  // Finish times in order: with a concurrency limit C, request i takes the
  // slot that the (i - C)-th finish freed, as a client with C connections
  // that sends in order would.
  std::vector<double> finishes;
  size_t limit = options.maxConcurrency;
  auto admissible = [&] {
    return limit == 0 || next < finishes.size() + limit;
  };
  Clock::time_point start = Clock::now();
  while (next < work.size() || engine.hasUnfinishedRequests()) {
    if (!engine.hasUnfinishedRequests())
      waitUntil(start, work[next].arrivalTime);
    for (; next < work.size() && admissible() &&
           work[next].arrivalTime <= since(start);
         ++next) {
      NewRequest r;
      r.requestId = std::to_string(firstId + next);
      r.promptTokenIds = work[next].prompt;
      r.samplingParams.temperature = 0;
      r.samplingParams.maxTokens = work[next].outputLength;
      r.samplingParams.ignoreEos = true;
      if (Status s = engine.addRequest(r); !s)
        return s;
      times[next].arrival = work[next].arrivalTime;
      if (limit != 0 && next >= limit)
        times[next].arrival =
            std::max(times[next].arrival, finishes[next - limit]);
      times[next].promptTokens = work[next].prompt.size();
    }
    Expected<std::vector<RequestOutput>> outputs = engine.step();
    if (!outputs)
      return outputs.status();
    ++m.steps;
    double t = since(start);
    for (const RequestOutput &out : *outputs) {
      RequestTimes &r = times[std::stoul(out.requestId) - firstId];
      if (!out.newTokenIds.empty()) {
        if (r.firstToken < 0)
          r.firstToken = t;
        r.tokenTimes.push_back(t);
      }
      r.outputTokens += out.newTokenIds.size();
      if (out.finished) {
        r.finish = t;
        finishes.push_back(t);
      }
    }
    // 0 means no block is held: nothing to sample.
    if (double u = engine.kvUtilization(); u > 0)
      utilization.add(u);
    m.maxResidentSeqs = std::max(m.maxResidentSeqs, scheduler.numRunning());
    if (outputs->empty() && scheduler.numRunning() == 0 &&
        engine.hasUnfinishedRequests())
      return Status::resourceExhausted(
          "the KV cache budget cannot hold the waiting requests");
  }
  summarize(times, since(start), m);
  utilization.store(m);
  m.preemptions = scheduler.numPreemptions() - preemptionsBefore;
  m.prefixHitTokens = scheduler.kvCache().numPrefixHitTokens() - hitsBefore;
  return Status::ok();
}

} // namespace

Expected<PolicyMetrics> runContinuous(std::shared_ptr<const plan::Plan> plan,
                                      const ExecutorFactory &makeExecutor,
                                      const std::vector<BenchRequest> &work,
                                      const ServingBenchOptions &options,
                                      std::vector<RequestTimes> *requestTimes,
                                      const std::vector<BenchRequest> *warmup) {
  Expected<exec::KVCacheLayout> layout = layoutOf(plan, makeExecutor);
  if (!layout)
    return layout.status();
  KVCacheConfig kv;
  kv.blockSize = size_t(layout->blockSize);
  kv.numBlocks = options.kvCacheMemory / size_t(layout->bytesPerBlock);
  kv.enablePrefixCaching = options.enablePrefixCaching;
  SchedulerConfig config;
  config.maxModelLen = options.maxModelLen;
  config.maxNumSeqs = options.maxNumSeqs;
  config.maxNumBatchedTokens = options.maxNumBatchedTokens;
  config.vocabSize = size_t(plan->configValue("vocab", 0));
  auto engine = core::ServingEngine::create(plan, makeExecutor(), config, kv);
  if (!engine)
    return engine.status();

  std::vector<RequestTimes> times;
  size_t firstId = 0;
  if (warmup && !warmup->empty()) {
    PolicyMetrics untimed;
    if (Status s = drive(**engine, *warmup, options, 0, untimed, times); !s)
      return s;
    firstId = warmup->size();
  }
  PolicyMetrics m;
  if (Status s = drive(**engine, work, options, firstId, m, times); !s)
    return s;
  if (requestTimes)
    *requestTimes = std::move(times);
  return m;
}

Expected<PolicyMetrics> runStatic(std::shared_ptr<const plan::Plan> plan,
                                  const ExecutorFactory &makeExecutor,
                                  const std::vector<BenchRequest> &work,
                                  const ServingBenchOptions &options) {
  Expected<exec::KVCacheLayout> layout = layoutOf(plan, makeExecutor);
  if (!layout)
    return layout.status();
  size_t blockSize = size_t(layout->blockSize);
  size_t blocksPerSlot = (options.maxModelLen + blockSize - 1) / blockSize;
  // Every slot reserves max-model-len tokens of KV up front.
  size_t slots = std::min(options.maxNumSeqs,
                          options.kvCacheMemory /
                              (blocksPerSlot * size_t(layout->bytesPerBlock)));
  if (slots == 0)
    return Status::resourceExhausted(
        "the KV cache budget holds no max-model-len slot for static "
        "batching");
  auto engine = core::Engine::create(plan, makeExecutor(),
                                     int64_t(slots * blocksPerSlot + 1));
  if (!engine)
    return engine.status();

  PolicyMetrics m;
  std::vector<RequestTimes> times(work.size());
  UtilizationTracker utilization;
  Clock::time_point start = Clock::now();
  size_t next = 0, batchIndex = 0;
  while (next < work.size()) {
    // A batch forms from what has arrived when the engine is free.
    waitUntil(start, work[next].arrivalTime);
    size_t end = next;
    while (end < work.size() && end - next < slots &&
           work[end].arrivalTime <=
               std::max(since(start), work[next].arrivalTime))
      ++end;
    size_t padded = 0, longestOutput = 0;
    for (size_t i = next; i < end; ++i) {
      padded = std::max(padded, work[i].prompt.size());
      longestOutput = std::max(longestOutput, work[i].outputLength);
    }
    size_t decodeSteps = std::min(longestOutput, options.maxModelLen - padded);
    std::vector<core::SequenceState> states(end - next);
    std::vector<core::SequenceState *> seqs;
    for (size_t i = next; i < end; ++i) {
      core::SequenceState &s = states[i - next];
      s.id = "b" + std::to_string(batchIndex) + "." + std::to_string(i);
      s.tokens.assign(padded - work[i].prompt.size(), 0); // Left padding.
      s.tokens.insert(s.tokens.end(), work[i].prompt.begin(),
                      work[i].prompt.end());
      seqs.push_back(&s);
      times[i].arrival = work[i].arrivalTime;
    }
    std::vector<float> logits;
    std::vector<int64_t> counts(seqs.size(), int64_t(padded));
    int64_t vocab = (*engine)->vocab();
    for (size_t step = 0; step < decodeSteps; ++step) {
      if (Status s = (*engine)->step(seqs, counts, logits); !s)
        return s;
      ++m.steps;
      vocab = (*engine)->vocab();
      double t = since(start);
      size_t live = 0;
      for (size_t k = 0; k < seqs.size(); ++k) {
        size_t i = next + k;
        seqs[k]->tokens.push_back(argmax(&logits[k * size_t(vocab)], vocab));
        if (times[i].outputTokens < work[i].outputLength) {
          if (times[i].firstToken < 0)
            times[i].firstToken = t;
          if (++times[i].outputTokens == work[i].outputLength)
            times[i].finish = t;
        }
        live += work[i].prompt.size() +
                std::min(times[i].outputTokens, work[i].outputLength);
      }
      utilization.add(double(live), double(seqs.size() * options.maxModelLen));
      std::fill(counts.begin(), counts.end(), 1);
    }
    for (size_t k = 0; k < seqs.size(); ++k) {
      size_t i = next + k;
      if (times[i].outputTokens < work[i].outputLength) {
        // Padding pushed this request past max-model-len: it ends short.
        m.truncatedTokens += work[i].outputLength - times[i].outputTokens;
        times[i].finish = since(start);
      }
      (*engine)->release(*seqs[k]);
    }
    m.maxResidentSeqs = std::max(m.maxResidentSeqs, seqs.size());
    next = end;
    ++batchIndex;
  }
  summarize(times, since(start), m);
  utilization.store(m);
  return m;
}

} // namespace folio::bench
