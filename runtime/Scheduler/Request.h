//===- Request.h - A request's serving state -------------------*- C++ -*-===//
//
// A request is a token sequence and a count of how many of its tokens have
// KV in the cache. There is no prefill or decode phase: a fresh prompt, a
// chunk of a long prompt, a decode step, a resumed preempted request and a
// speculative step are all "compute tokens [numComputedTokens,
// numTokensWithSpec())", which keeps the scheduler to one code path.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SCHEDULER_REQUEST_H
#define FOLIO_RUNTIME_SCHEDULER_REQUEST_H

#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace folio {

enum class RequestStatus {
  Waiting,   ///< Queued, holds no blocks.
  Running,   ///< Admitted, holds blocks.
  Preempted, ///< Evicted back to the queue; resumes by recomputation.
  Finished,  ///< Done; see FinishReason.
};

enum class FinishReason {
  None,
  Stop,   ///< EOS or a stop token was generated.
  Length, ///< max_tokens or the model's context length was reached.
  Abort,  ///< The client went away.
  /// The request broke (e.g. its logits held NaN or +inf); only this
  /// request ends, and RequestOutput::error says why.
  Error,
};

/// The OpenAI `finish_reason` string ("stop", "length", "abort"), or
/// "error" for FinishReason::Error.
const char *finishReasonName(FinishReason reason);

/// What a client submits.
struct NewRequest {
  RequestId requestId;
  std::vector<TokenId> promptTokenIds;
  SamplingParams samplingParams;
  /// Lower runs first under the priority policy.
  int32_t priority = 0;
  /// Requests with different salts never share prefix-cache blocks.
  uint64_t cacheSalt = 0;
};

struct Request {
  RequestId requestId;
  SamplingParams samplingParams;
  int32_t priority = 0;
  uint64_t cacheSalt = 0;
  /// Keys the request's random draws: its own seed or one drawn for it.
  uint64_t seed = 0;
  /// Admission order; ties in every ordering policy are broken by it.
  uint64_t arrivalIndex = 0;
  /// Output-length limit after resolving an unset max_tokens.
  size_t maxTokens = 0;
  /// For parallel samples: the id the client submitted.
  std::optional<RequestId> parentRequestId;
  /// For parallel samples after the first: the sample whose prompt blocks
  /// this one shares.
  std::optional<RequestId> shareSource;

  std::vector<TokenId> promptTokenIds;
  std::vector<TokenId> outputTokenIds;
  /// Prompt followed by output: what the KV cache holds, in order.
  std::vector<TokenId> allTokenIds;
  /// Draft tokens to verify in the next step; not part of allTokenIds.
  std::vector<TokenId> specTokenIds;

  /// Tokens whose KV is in the cache (or being computed this step).
  size_t numComputedTokens = 0;
  /// Tokens the executor already knows; later ones go out as diffs.
  size_t numTokensSent = 0;

  RequestStatus status = RequestStatus::Waiting;
  FinishReason finishReason = FinishReason::None;
  /// The stop token that ended the request, if one did.
  std::optional<TokenId> stopTokenId;
  uint32_t numPreemptions = 0;

  size_t numPromptTokens() const { return promptTokenIds.size(); }
  size_t numOutputTokens() const { return outputTokenIds.size(); }
  size_t numTokens() const { return allTokenIds.size(); }
  size_t numTokensWithSpec() const {
    return allTokenIds.size() + specTokenIds.size();
  }
  /// The longest this request can grow: prompt plus its output limit.
  size_t maxTotalTokens() const { return numPromptTokens() + maxTokens; }
  bool isFinished() const { return status == RequestStatus::Finished; }

  void appendOutputToken(TokenId token) {
    outputTokenIds.push_back(token);
    allTokenIds.push_back(token);
  }
};

} // namespace folio

#endif // FOLIO_RUNTIME_SCHEDULER_REQUEST_H
