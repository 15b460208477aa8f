//===- SchedulerConfig.h - Scheduler limits and policies -------*- C++ -*-===//

#ifndef FOLIO_RUNTIME_SCHEDULER_SCHEDULERCONFIG_H
#define FOLIO_RUNTIME_SCHEDULER_SCHEDULERCONFIG_H

#include "runtime/KVCache/KVCacheManager.h"
#include "runtime/Scheduler/SchedulingPolicies.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace folio {

/// Field names follow vLLM's flags where the meaning is the same.
struct SchedulerConfig {
  /// Token budget of one step (--max-num-batched-tokens).
  size_t maxNumBatchedTokens = 2048;
  /// Running requests at most (--max-num-seqs).
  size_t maxNumSeqs = 256;
  /// Prompt plus output at most (--max-model-len).
  size_t maxModelLen = 2048;
  /// Split prompts over steps to fill the budget; without it a prompt is
  /// admitted only when it fits the remaining budget whole.
  bool enableChunkedPrefill = true;
  OrderingPolicyKind ordering = OrderingPolicyKind::Fcfs;
  CapacityPolicyKind capacity = CapacityPolicyKind::MaxUtilization;
  /// The model's end-of-sequence token, if it has one.
  std::optional<TokenId> eosTokenId;
  /// Bounds prompt and stop token ids when nonzero.
  size_t vocabSize = 0;
  /// Derives seeds for requests that bring none, so runs are reproducible.
  uint64_t seed = 0;

  /// Checks the limits against each other and against the KV cache: the
  /// longest allowed request must fit the pool on its own, or preemption
  /// could not guarantee progress.
  Status validate(const KVCacheConfig &kvCache) const;
};

} // namespace folio

#endif // FOLIO_RUNTIME_SCHEDULER_SCHEDULERCONFIG_H
