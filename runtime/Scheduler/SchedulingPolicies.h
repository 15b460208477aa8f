//===- SchedulingPolicies.h - Pluggable scheduling decisions ---*- C++ -*-===//
//
// The scheduler's mechanism (closing token gaps under a budget) is fixed;
// two decisions are policies, as in TensorRT-LLM's batch manager:
//  - ordering: who is admitted first and who is preempted first;
//  - capacity: whether a request may be admitted at all right now.
// Both are strategy classes built by a factory from a kind or a flag value.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SCHEDULER_SCHEDULINGPOLICIES_H
#define FOLIO_RUNTIME_SCHEDULER_SCHEDULINGPOLICIES_H

#include "runtime/KVCache/KVCacheManager.h"
#include "runtime/Scheduler/Request.h"
#include "runtime/Support/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace folio {

enum class OrderingPolicyKind {
  Fcfs,     ///< By arrival.
  Priority, ///< By NewRequest::priority (lower first), then arrival.
};

/// A strict weak order over requests. The running list is kept in this
/// order, so the last running request is the preemption victim, and the
/// first waiting request is admitted next.
class OrderingPolicy {
public:
  virtual ~OrderingPolicy() = default;
  virtual bool precedes(const Request &a, const Request &b) const = 0;
};

enum class CapacityPolicyKind {
  /// Admit whatever fits now; preempt when running requests outgrow memory.
  MaxUtilization,
  /// Admit only if every admitted request can reach its maximum length
  /// without preemption (TensorRT-LLM GUARANTEED_NO_EVICT).
  GuaranteedNoEvict,
};

class CapacityPolicy {
public:
  virtual ~CapacityPolicy() = default;
  /// Whether `candidate`, which would adopt `computed`, may join `running`.
  virtual bool canAdmit(const Request &candidate,
                        const ComputedBlocks &computed,
                        const std::vector<Request *> &running,
                        const KVCacheManager &kvCache) const = 0;
};

std::unique_ptr<OrderingPolicy> createOrderingPolicy(OrderingPolicyKind kind);
std::unique_ptr<CapacityPolicy> createCapacityPolicy(CapacityPolicyKind kind);

/// Flag spellings: "fcfs", "priority".
Expected<OrderingPolicyKind> parseOrderingPolicy(const std::string &name);
/// Flag spellings: "max-utilization", "guaranteed-no-evict".
Expected<CapacityPolicyKind> parseCapacityPolicy(const std::string &name);

} // namespace folio

#endif // FOLIO_RUNTIME_SCHEDULER_SCHEDULINGPOLICIES_H
