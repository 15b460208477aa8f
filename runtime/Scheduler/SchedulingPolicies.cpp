//===- SchedulingPolicies.cpp - Pluggable scheduling decisions ------------===//

#include "runtime/Scheduler/SchedulingPolicies.h"

#include <cassert>

using namespace folio;

namespace {

class FcfsPolicy final : public OrderingPolicy {
public:
  bool precedes(const Request &a, const Request &b) const override {
    return a.arrivalIndex < b.arrivalIndex;
  }
};

class PriorityPolicy final : public OrderingPolicy {
public:
  bool precedes(const Request &a, const Request &b) const override {
    if (a.priority != b.priority)
      return a.priority < b.priority;
    return a.arrivalIndex < b.arrivalIndex;
  }
};

class MaxUtilizationPolicy final : public CapacityPolicy {
public:
  bool canAdmit(const Request &, const ComputedBlocks &,
                const std::vector<Request *> &,
                const KVCacheManager &) const override {
    // Allocation itself is the only limit.
    return true;
  }
};

/// Keeps `free blocks >= sum over running requests of the blocks each still
/// needs to reach maxTotalTokens`. Every allocation then succeeds: each one
/// lowers both sides equally, and frees only raise the left side.
class GuaranteedNoEvictPolicy final : public CapacityPolicy {
public:
  bool canAdmit(const Request &candidate, const ComputedBlocks &computed,
                const std::vector<Request *> &running,
                const KVCacheManager &kvCache) const override {
    size_t reserved = 0;
    for (const Request *request : running)
      reserved += remainingBlocks(*request, kvCache);
    // Adopted blocks that others hold already cost no free block; every
    // other block the candidate may ever need does.
    size_t alreadyHeld = 0;
    for (BlockId b : computed.blockIds)
      alreadyHeld += kvCache.pool().block(b).refCount > 0;
    size_t need =
        kvCache.blocksForTokens(candidate.maxTotalTokens()) - alreadyHeld;
    return reserved + need <= kvCache.numFreeBlocks();
  }

private:
  static size_t remainingBlocks(const Request &request,
                                const KVCacheManager &kvCache) {
    size_t total = kvCache.blocksForTokens(request.maxTotalTokens());
    size_t held = kvCache.blockIds(request.requestId).size();
    return total > held ? total - held : 0;
  }
};

} // namespace

std::unique_ptr<OrderingPolicy>
folio::createOrderingPolicy(OrderingPolicyKind kind) {
  switch (kind) {
  case OrderingPolicyKind::Fcfs:
    return std::make_unique<FcfsPolicy>();
  case OrderingPolicyKind::Priority:
    return std::make_unique<PriorityPolicy>();
  }
  assert(false && "unknown ordering policy");
  return nullptr;
}

std::unique_ptr<CapacityPolicy>
folio::createCapacityPolicy(CapacityPolicyKind kind) {
  switch (kind) {
  case CapacityPolicyKind::MaxUtilization:
    return std::make_unique<MaxUtilizationPolicy>();
  case CapacityPolicyKind::GuaranteedNoEvict:
    return std::make_unique<GuaranteedNoEvictPolicy>();
  }
  assert(false && "unknown capacity policy");
  return nullptr;
}

Expected<OrderingPolicyKind>
folio::parseOrderingPolicy(const std::string &name) {
  if (name == "fcfs")
    return OrderingPolicyKind::Fcfs;
  if (name == "priority")
    return OrderingPolicyKind::Priority;
  return Status::invalidArgument("unknown scheduling policy '" + name +
                                 "'; expected 'fcfs' or 'priority'");
}

Expected<CapacityPolicyKind>
folio::parseCapacityPolicy(const std::string &name) {
  if (name == "max-utilization")
    return CapacityPolicyKind::MaxUtilization;
  if (name == "guaranteed-no-evict")
    return CapacityPolicyKind::GuaranteedNoEvict;
  return Status::invalidArgument(
      "unknown capacity policy '" + name +
      "'; expected 'max-utilization' or 'guaranteed-no-evict'");
}
