//===- SpeculativeStep.h - Verifying one step's draft tokens ----*- C++ -*-===//
//
// The host side of verification: the target scored each speculating
// sequence's k drafts and the position after them (k + 1 logits rows,
// laid out [S, K + 1, V] by the model runner). Each row gets the
// request's logits processing with the drafts before it as history
// (penalties, temperature, min-p, top-k, top-p), so that target and draft
// distributions are processed alike; then the plan's verify entry
// (`folio.spec_verify`) keeps drafts and draws the corrected or bonus
// token, with uniforms keyed by the request's seed and the token position
// (runtime/Sampler/Philox.h), so a seeded request verifies the same way in
// any batch.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_CORE_SPECULATIVESTEP_H
#define FOLIO_RUNTIME_CORE_SPECULATIVESTEP_H

#include "runtime/Executor/Executor.h"
#include "runtime/Sampler/Sampler.h"
#include "runtime/Sampler/SamplingParams.h"

#include <string>
#include <vector>

namespace folio::core {

/// One speculating sequence of a step. Views only.
struct SpecSequence {
  const std::vector<TokenId> *prompt = nullptr;
  const std::vector<TokenId> *output = nullptr;
  const std::vector<TokenId> *drafts = nullptr; ///< k >= 1 tokens
  /// [k', V] with k' >= k: the draft's distributions, or null/empty for a
  /// deterministic proposer (one-hot).
  const std::vector<float> *draftProbs = nullptr;
  /// Where the draft model kept them on the device instead (the first of
  /// k rows of its exec::DeviceProbRows), or -1.
  int32_t draftProbsRow = -1;
  const SamplingParams *params = nullptr;
  uint64_t seed = 0;
  /// Position of the first draft (the sequence's known length).
  size_t position = 0;
};

/// Whether `seq` is sampled and its draft distributions are only where the
/// draft model kept them on a device (draftProbsRow, no host copy): a host
/// verification must copy them first, or it would read the drafts as
/// one-hot and keep them too often.
inline bool draftProbsOnlyOnDevice(const SpecSequence &seq) {
  return seq.draftProbsRow >= 0 && !seq.params->isGreedy() &&
         (!seq.draftProbs || seq.draftProbs->empty());
}

struct SpecOutcome {
  /// The kept drafts, then the corrected or bonus token.
  std::vector<TokenId> tokens;
  /// One per token when the request asked for logprobs.
  std::vector<TokenLogprobs> logprobs;
  size_t numAccepted = 0;
  /// Set when this sequence's rows were unusable (NaN, +inf, only -inf,
  /// or a history token outside the vocabulary): no tokens then.
  std::string error;
};

/// Verifies `seqs` against `logits` ([seqs.size(), maxDrafts + 1, vocab],
/// rewritten in place with the processed rows). Fails only when the
/// executor fails; a sequence's own bad rows fail that sequence alone.
Status verifySpeculative(exec::Executor &executor, float *logits,
                         int64_t maxDrafts, int64_t vocab,
                         const std::vector<SpecSequence> &seqs,
                         std::vector<SpecOutcome> &out);

/// verifySpeculative with the CPU kernels of `folio.spec_verify`
/// (codegen/CPU/SpecVerify.h) in place of a plan's verify entry: the
/// reference for verifiers that run elsewhere (the CUDA verifier's tests,
/// folio-gpu-bench).
Status verifySpeculativeOnCpu(float *logits, int64_t maxDrafts, int64_t vocab,
                              const std::vector<SpecSequence> &seqs,
                              std::vector<SpecOutcome> &out);

/// Greedy verification from each row's argmax alone, taken where the
/// logits are (Executor::forwardGreedy): for plain greedy sequences
/// (plainGreedy) the verify entry's greedy rule keeps the drafts while each
/// equals the argmax of the row before it, then takes the argmax after the
/// last one kept, so the rows themselves need not come back from a GPU.
/// `argmax` is [seqs.size(), maxDrafts + 1] (the layout of the logits rows
/// verifySpeculative takes); an entry outside [0, vocab) is a row the
/// device refused (NaN, +inf, or only -inf), which fails that sequence
/// alone, as verifySpeculative does.
void verifyGreedyTokens(const int32_t *argmax, int64_t maxDrafts, int64_t vocab,
                        const std::vector<SpecSequence> &seqs,
                        std::vector<SpecOutcome> &out);

/// The uniforms of one sequence's rejection sampling, as verifySpeculative
/// draws them ([maxDrafts + 1]: draft j's acceptance, then the draw), keyed
/// by its seed and position (runtime/Sampler/Philox.h).
void verifyUniforms(const SpecSequence &seq, int64_t maxDrafts, float *out);

/// The penalties' lists of `seq`'s maxDrafts + 1 verified rows (tokens[j],
/// counts[j]), as exec::DeviceVerify::rowPenaltyTokens takes them: row j's
/// history holds the output and drafts 0..j-1 (rows past the drafts, all
/// of them), as verifySpeculative penalizes each row (penaltyList).
void verifyPenaltyLists(const SpecSequence &seq, int64_t maxDrafts,
                        std::vector<int32_t> *tokens,
                        std::vector<int32_t> *counts);

/// Whether a device's verifier can take `seq`: greedy, or a draw whose
/// drafts are one-hot (no draft probabilities, as the n-gram proposer
/// gives) or whose distributions a draft model kept where the verifier
/// reads them (draftProbsRow, where `deviceProbs`:
/// Executor::verifiesDraftProbs); logprobs only where `logprobs`
/// (Executor::logprobsOnDevice), penalties only where `penalties`
/// (Executor::penalizesOnDevice; each row penalized with the drafts before
/// it as history).
bool verifiableOnDevice(const SpecSequence &seq, bool logprobs, bool penalties,
                        bool deviceProbs);

/// Outcomes of a verification taken where the logits are
/// (Executor::forwardVerified): `accepted` [seqs.size()], -1 for a
/// sequence whose rows the device refused (NaN, +inf, or only -inf), which
/// fails that sequence alone as verifySpeculative does; `tokens`
/// [seqs.size(), maxDrafts + 1]. An internal error when the device kept
/// more drafts than a sequence proposed or wrote a token outside the
/// vocabulary.
Status verifiedOnDevice(const int32_t *accepted, const int32_t *tokens,
                        int64_t maxDrafts, int64_t vocab,
                        const std::vector<SpecSequence> &seqs,
                        std::vector<SpecOutcome> &out);

} // namespace folio::core

#endif // FOLIO_RUNTIME_CORE_SPECULATIVESTEP_H
