//===- ServingEngine.cpp - The continuous-batching engine loop ------------===//

#include "runtime/Core/ServingEngine.h"

#include "runtime/Core/Engine.h"

#include <algorithm>
#include <cstdint>

namespace folio::core {

Expected<std::unique_ptr<ServingEngine>>
ServingEngine::create(std::shared_ptr<const plan::Plan> plan,
                      std::unique_ptr<exec::Executor> executor,
                      const SchedulerConfig &schedulerConfig,
                      const KVCacheConfig &kvCache) {
  // The scheduler keeps every request within max-model-len, so that is
  // what must fit the plan.
  if (Status s = Engine::checkMaxModelLen(
          *plan, int64_t(std::min<size_t>(schedulerConfig.maxModelLen,
                                          size_t(INT64_MAX))));
      !s)
    return s;
  if (Status s = executor->load(plan); !s)
    return s;
  exec::KVCacheLayout layout = executor->kvCacheLayout();
  if (layout.numLayers == 0)
    return Status::invalidArgument("the plan has no KV cache inputs");
  if (size_t(layout.blockSize) != kvCache.blockSize)
    return Status::invalidArgument(
        "the KV cache block size (" + std::to_string(kvCache.blockSize) +
        ") differs from the plan's (" + std::to_string(layout.blockSize) +
        "); recompile with --block-size or pass the plan's");
  if (Status s = executor->allocateKVCache(int64_t(kvCache.numBlocks)); !s)
    return s;
  Expected<std::unique_ptr<Scheduler>> scheduler =
      Scheduler::create(schedulerConfig, kvCache);
  if (!scheduler)
    return scheduler.status();
  auto engine = std::unique_ptr<ServingEngine>(new ServingEngine());
  engine->plan = std::move(plan);
  engine->executor = std::move(executor);
  engine->scheduler = std::move(*scheduler);
  engine->runner =
      std::make_unique<ModelRunner>(*engine->executor, layout.blockSize);
  return engine;
}

double ServingEngine::kvUtilization() const {
  const KVCacheManager &kv = scheduler->kvCache();
  const BlockPool &pool = kv.pool();
  size_t held = pool.numUsableBlocks() - pool.numFreeBlocks();
  if (held == 0)
    return 0;
  return double(scheduler->numRunningComputedTokens()) /
         double(held * kv.blockSize());
}

Expected<std::vector<RequestOutput>> ServingEngine::step() {
  SchedulerOutput scheduled = scheduler->schedule();
  Expected<ModelRunnerOutput> result = runner->execute(scheduled);
  if (!result)
    return result.status();
  return scheduler->updateFromOutput(scheduled, *result);
}

Status ServingEngine::runToCompletion(
    const std::function<void(const RequestOutput &)> &onOutput) {
  while (scheduler->hasUnfinishedRequests()) {
    Expected<std::vector<RequestOutput>> outputs = step();
    if (!outputs)
      return outputs.status();
    if (outputs->empty() && scheduler->numRunning() == 0)
      return Status::resourceExhausted(
          "no request can be scheduled: the KV cache is too small for the "
          "waiting requests");
    for (const RequestOutput &out : *outputs)
      onOutput(out);
  }
  return Status::ok();
}

} // namespace folio::core
