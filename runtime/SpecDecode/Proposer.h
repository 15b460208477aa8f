//===- Proposer.h - Draft tokens for speculative decoding -------*- C++ -*-===//
//
// A proposer guesses the next k tokens of running sequences; the target
// model then scores all of them in one forward and `folio.spec_verify`
// keeps what the target agrees with (runtime/Core/ModelRunner). Proposers
// are interchangeable behind this interface: a draft model compiled by
// Folio (DraftProposer) or n-gram lookup in the sequence itself
// (NgramProposer).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SPECDECODE_PROPOSER_H
#define FOLIO_RUNTIME_SPECDECODE_PROPOSER_H

#include "runtime/Executor/Executor.h"
#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace folio::spec {

/// One running sequence that may speculate this step. Views only.
struct ProposeInput {
  const RequestId *requestId = nullptr;
  /// Every known token: prompt then output (never earlier drafts).
  const std::vector<TokenId> *tokens = nullptr;
  /// The prompt's length within `tokens` (penalties treat the two apart).
  size_t numPromptTokens = 0;
  const SamplingParams *params = nullptr;
  /// The request's seed: keys the draft's own random draws.
  uint64_t seed = 0;
  /// The most drafts worth proposing: tokens left before the request's
  /// length limit (drafts past it could never be kept).
  size_t maxDrafts = SIZE_MAX;
};

/// What a proposer guesses for one sequence.
struct Proposal {
  /// At most k tokens; empty when it has no guess (speculation is off for
  /// the sequence this step).
  std::vector<TokenId> tokens;
  /// [tokens.size(), vocab] row-major: the distribution each token was
  /// drawn from, after the request's logits processing. Empty for a
  /// deterministic guess (n-gram lookup, or a greedy request), which
  /// verification treats as one-hot, and where probsRow says where they
  /// are kept instead.
  std::vector<float> probs;
  /// Where a draft model kept those distributions on its device instead
  /// (Proposer::keepProbsFor): the first of tokens.size() rows of
  /// deviceProbs(), or -1.
  int32_t probsRow = -1;
};

class Proposer {
public:
  virtual ~Proposer() = default;
  /// "draft" or "ngram", as --speculative-method names it.
  virtual const char *method() const = 0;
  /// Up to `k` tokens for each input (k >= 1); `out` gets one entry per
  /// input, in order. Fails only when the proposer itself broke (an
  /// executor error); a sequence it cannot serve gets an empty proposal.
  virtual Status propose(const std::vector<ProposeInput> &inputs, size_t k,
                         std::vector<Proposal> &out) = 0;
  /// Forgets a sequence (finished, aborted or preempted) and frees what it
  /// held. Unknown ids are ignored.
  virtual void release(const RequestId &requestId) = 0;
  /// Offers to keep the draft's distributions where `verifier` reads them
  /// (a draft model on the target's GPU) instead of bringing them to the
  /// host (Proposal::probsRow); returns whether it will.
  virtual bool keepProbsFor(const exec::Executor &verifier) {
    (void)verifier;
    return false;
  }
  /// The rows the last propose() kept distributions in (keepProbsFor).
  virtual exec::DeviceProbRows deviceProbs() const { return {}; }
  /// Bytes of KV cache the proposer allocated for itself (0 for none).
  virtual int64_t kvCacheBytes() const { return 0; }
  /// Whether the last propose() cost what proposing costs step after step:
  /// false when it first had to catch a sequence up with more tokens than
  /// the last verification could have added (a new prompt, or the tokens
  /// decoded while speculation was off). The engine leaves such steps out
  /// of the timings that choose k: catching up is paid once, not per step.
  virtual bool lastProposalSteady() const { return true; }
};

} // namespace folio::spec

#endif // FOLIO_RUNTIME_SPECDECODE_PROPOSER_H
