//===- ServingEngine.h - The continuous-batching engine loop ----*- C++ -*-===//
//
// schedule -> forward (the compiled plan) -> sample -> update: each step
// the scheduler picks what runs under its token and sequence budgets
// (chunked prefill, preemption by recompute), the model runner executes it,
// and the scheduler appends the sampled tokens, applies stop conditions and
// frees finished requests' blocks. The scheduler's block tables address the
// executor's KV cache directly.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_SERVINGENGINE_H
#define FOLIO_RUNTIME_CORE_SERVINGENGINE_H

#include "runtime/Core/ModelRunner.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Scheduler/Scheduler.h"

#include <functional>
#include <memory>

namespace folio::core {

class ServingEngine {
public:
  /// Loads `plan`, sizes the executor's KV cache to `kvCache.numBlocks`
  /// and builds the scheduler. The block size must be the plan's; the
  /// scheduler's max-model-len at most the plan's max_positions and
  /// max_context (the scheduler then refuses requests whose prompt +
  /// max_tokens exceed it).
  static Expected<std::unique_ptr<ServingEngine>>
  create(std::shared_ptr<const plan::Plan> plan,
         std::unique_ptr<exec::Executor> executor,
         const SchedulerConfig &schedulerConfig, const KVCacheConfig &kvCache);

  Status addRequest(const NewRequest &request) {
    return scheduler->addRequest(request);
  }
  Status abortRequest(const RequestId &id) {
    return scheduler->abortRequest(id);
  }

  /// One engine step; the outputs of the requests that advanced. An empty
  /// result with unfinished requests means they are all waiting for memory.
  /// A request whose logits row held NaN or +inf, or only -inf, finishes
  /// alone with FinishReason::Error and RequestOutput::error set; the step
  /// itself succeeds.
  Expected<std::vector<RequestOutput>> step();

  /// Steps until every request finished, calling `onOutput` for each
  /// request's news as it arrives (streaming). Fails if a step fails or no
  /// progress is possible.
  Status
  runToCompletion(const std::function<void(const RequestOutput &)> &onOutput);

  /// Token slots whose KV a running request holds over the token slots of
  /// every held block (paging wastes only partly filled last blocks); 0
  /// when no block is held.
  double kvUtilization() const;
  /// The loaded plan's KV geometry (bytes per block, dtypes by layer).
  exec::KVCacheLayout kvCacheLayout() const {
    return executor->kvCacheLayout();
  }

  bool hasUnfinishedRequests() const {
    return scheduler->hasUnfinishedRequests();
  }
  const Scheduler &getScheduler() const { return *scheduler; }

private:
  ServingEngine() = default;

  std::shared_ptr<const plan::Plan> plan;
  std::unique_ptr<exec::Executor> executor;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<ModelRunner> runner;
};

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_SERVINGENGINE_H
