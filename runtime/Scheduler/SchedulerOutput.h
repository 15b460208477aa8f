//===- SchedulerOutput.h - Scheduler <-> executor contract -----*- C++ -*-===//
//
// Plain data only: the executor turns a SchedulerOutput into the flattened
// `forward` inputs of the serving contract and answers with a
// ModelRunnerOutput. Requests the executor has not seen arrive in full;
// requests it has seen arrive as diffs (new tokens, new block ids), which
// the append-only block tables make possible.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SCHEDULER_SCHEDULEROUTPUT_H
#define FOLIO_RUNTIME_SCHEDULER_SCHEDULEROUTPUT_H

#include "runtime/Sampler/Sampler.h"
#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Scheduler/Request.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace folio {

/// A request the executor has no state for: first admission, or resumption
/// after preemption (then outputTokenIds is not empty).
struct NewRequestData {
  RequestId requestId;
  std::vector<TokenId> promptTokenIds;
  std::vector<TokenId> outputTokenIds;
  SamplingParams samplingParams;
  uint64_t seed = 0;
  /// The whole block table.
  std::vector<BlockId> blockIds;
  /// Leading tokens whose KV is already cached (prefix hit or shared).
  size_t numComputedTokens = 0;
};

/// A request the executor saw in an earlier step.
struct CachedRequestData {
  RequestId requestId;
  /// Tokens appended since the executor last saw the request (the tokens
  /// it sampled itself in the last step).
  std::vector<TokenId> newTokenIds;
  /// Blocks appended to the block table.
  std::vector<BlockId> newBlockIds;
  size_t numComputedTokens = 0;
};

struct SchedulerOutput {
  std::vector<NewRequestData> scheduledNewRequests;
  std::vector<CachedRequestData> scheduledCachedRequests;
  /// Tokens to compute this step per request, speculative ones included.
  std::unordered_map<RequestId, size_t> numScheduledTokens;
  size_t totalNumScheduledTokens = 0;
  /// Draft tokens scheduled for verification, per request; they are the
  /// last tokens counted in numScheduledTokens.
  std::unordered_map<RequestId, std::vector<TokenId>> scheduledSpecDecodeTokens;
  /// Requests finished or aborted since the last step: drop their state.
  std::vector<RequestId> finishedRequestIds;
  /// Requests preempted this step: drop their state; they return later as
  /// new requests. Never scheduled in the same step.
  std::vector<RequestId> preemptedRequestIds;

  bool empty() const { return totalNumScheduledTokens == 0; }
};

/// The executor's result for one request.
struct RunnerRequestOutput {
  RequestId requestId;
  /// Empty while a prompt is only partly computed. Otherwise the accepted
  /// draft tokens followed by one sampled (bonus) token.
  std::vector<TokenId> sampledTokenIds;
  /// One entry per sampled token when the request asked for logprobs.
  std::vector<TokenLogprobs> logprobs;
  /// Non-empty when this request's step failed (non-finite logits): no
  /// tokens; the scheduler finishes the request with FinishReason::Error.
  std::string error;
};

struct ModelRunnerOutput {
  std::vector<RunnerRequestOutput> outputs;
};

/// What a client sees after a step: its new tokens, and whether it is done.
struct RequestOutput {
  RequestId requestId;
  std::vector<TokenId> newTokenIds;
  std::vector<TokenLogprobs> newLogprobs;
  bool finished = false;
  FinishReason finishReason = FinishReason::None;
  std::optional<TokenId> stopTokenId;
  /// With FinishReason::Error: what went wrong, naming the request and the
  /// step (e.g. "logits of request 'r3' hold NaN (entry 5) at step 17,
  /// output token 4"). Empty otherwise.
  std::string error;
};

} // namespace folio

#endif // FOLIO_RUNTIME_SCHEDULER_SCHEDULEROUTPUT_H
