//===- LogitsProcessors.h - Steps from logits to a distribution -*- C++ -*-===//
//
// Each step rewrites one logits row in place; a masked token gets -inf. The
// order, as in vLLM's v1 sampler: penalties, temperature, min-p, top-k,
// top-p. Rows are doubles so that the softmax sums the sampler and the
// top-p cut rely on are not at the mercy of float rounding.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SAMPLER_LOGITSPROCESSORS_H
#define FOLIO_RUNTIME_SAMPLER_LOGITSPROCESSORS_H

#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Support/Types.h"

#include <vector>

namespace folio {

/// Whether `params` change logits by the tokens seen (repetition,
/// presence or frequency penalty); without them a greedy row's token is
/// its first maximum as the model gave it.
inline bool hasPenalties(const SamplingParams &params) {
  return params.repetitionPenalty != 1.0f || params.presencePenalty != 0.0f ||
         params.frequencyPenalty != 0.0f;
}

/// Repetition penalty over prompt and output tokens (a seen token's positive
/// logit is divided by the penalty, a negative one multiplied), then
/// frequency and presence penalties over output tokens only (OpenAI).
/// Precondition: every token id indexes `logits`.
void applyPenalties(std::vector<double> &logits, const SamplingParams &params,
                    const std::vector<TokenId> &promptTokenIds,
                    const std::vector<TokenId> &outputTokenIds);

/// The tokens applyPenalties touches, each once in increasing id, with its
/// count in the output: every token of the output, and the prompt's (count
/// 0 where only there) where the repetition penalty reads them. What a
/// device applies the same penalties from (exec::DeviceDraw::penaltyTokens,
/// penaltyCounts).
void penaltyList(const SamplingParams &params,
                 const std::vector<TokenId> &promptTokenIds,
                 const std::vector<TokenId> &outputTokenIds,
                 std::vector<int32_t> &tokens, std::vector<int32_t> &counts);

/// Divides by the temperature. Precondition: temperature > 0.
void applyTemperature(std::vector<double> &logits, double temperature);

/// Masks tokens whose probability is below `minP` times the largest.
void applyMinP(std::vector<double> &logits, double minP);

/// Keeps the tokens whose logit is at least the k-th largest; ties at the
/// threshold all survive, so the result does not depend on sort stability.
/// k <= 0 or k >= the number of unmasked tokens keeps everything.
void applyTopK(std::vector<double> &logits, int32_t k);

/// Keeps the smallest set of most likely tokens whose probability reaches
/// `topP` (at least one token; ties broken by lower token id first).
void applyTopP(std::vector<double> &logits, double topP);

/// log(sum(exp(logits))) over unmasked entries; -inf when all are masked.
double logSumExp(const std::vector<double> &logits);

} // namespace folio

#endif // FOLIO_RUNTIME_SAMPLER_LOGITSPROCESSORS_H
