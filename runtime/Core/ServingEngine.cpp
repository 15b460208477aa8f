//===- ServingEngine.cpp - The continuous-batching engine loop ------------===//

#include "runtime/Core/ServingEngine.h"

namespace folio::core {

Expected<std::unique_ptr<ServingEngine>>
ServingEngine::create(std::shared_ptr<const plan::Plan> plan,
                      std::unique_ptr<exec::Executor> executor,
                      const SchedulerConfig &schedulerConfig,
                      const KVCacheConfig &kvCache) {
  // Past max_context tokens the attention masks are unproven (see
  // Engine::generate).
  int64_t maxContext = plan->configValue("max_context", 0);
  if (maxContext > 0 && schedulerConfig.maxModelLen > size_t(maxContext))
    return Status::invalidArgument(
        "max-model-len " + std::to_string(schedulerConfig.maxModelLen) +
        " exceeds the " + std::to_string(maxContext) +
        " tokens the model's attention masks were proven causal up to");
  // A table indexed by position has max_positions rows; the scheduler
  // keeps every request within max-model-len, so that is the bound.
  int64_t maxPositions = plan->configValue("max_positions", 0);
  if (maxPositions > 0 && schedulerConfig.maxModelLen > size_t(maxPositions))
    return Status::invalidArgument(
        "max-model-len " + std::to_string(schedulerConfig.maxModelLen) +
        " exceeds the model's " + std::to_string(maxPositions) +
        " positions (its position table's rows, the plan's max_positions)");
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
