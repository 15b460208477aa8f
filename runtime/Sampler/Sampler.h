//===- Sampler.h - Tokens from a batch of logits rows ----------*- C++ -*-===//
//
// Turns the `logits[R, vocab]` output of the serving contract into one
// token per row. Rows are independent: each carries its request's settings
// and history, and its randomness comes from a counter-based generator
// keyed by the request's seed and the sampled token's position. So a seeded
// request samples the same tokens whatever shares its batch, and a
// preempted request resamples exactly what it sampled before.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SAMPLER_SAMPLER_H
#define FOLIO_RUNTIME_SAMPLER_SAMPLER_H

#include "runtime/Sampler/SamplingParams.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace folio {

/// What the sampler needs to know about the request behind one logits row.
struct SampleRow {
  const SamplingParams *params = nullptr;
  /// History for the penalties; may be null when no penalty is set.
  const std::vector<TokenId> *promptTokenIds = nullptr;
  const std::vector<TokenId> *outputTokenIds = nullptr;
  /// The request's seed, or one the engine drew for it at admission.
  uint64_t seed = 0;
  /// Position of the token being sampled: keys the random draw.
  uint64_t position = 0;
};

/// Logprobs of one sampled token under the distribution it was drawn from.
struct TokenLogprobs {
  float logprob = 0;
  /// Most likely first, ties by lower token id; SamplingParams::logprobs
  /// entries.
  std::vector<std::pair<TokenId, float>> top;
};

struct SampledToken {
  TokenId token = 0;
  /// Present when the request asked for logprobs.
  bool hasLogprobs = false;
  TokenLogprobs logprobs;
};

/// What makes a logits row unusable. Any NaN, or any +inf, means the
/// model broke for that row: a token drawn from it would be arbitrary.
/// -inf entries are legitimate (a masked token) unless every entry is -inf.
enum class LogitsFault { None, NaN, PosInf, AllNegInf };

/// "NaN", "+inf" or "only -inf" ("" for None).
const char *logitsFaultName(LogitsFault fault);

struct LogitsCheck {
  LogitsFault fault = LogitsFault::None;
  /// The first entry holding the fault (0 for AllNegInf).
  size_t index = 0;
  bool ok() const { return fault == LogitsFault::None; }
};

/// Checks one row in a single branch-free pass over the bit patterns (it
/// vectorises, and fast-math cannot fold it away); only a faulty row is
/// scanned again to find the first bad entry. NaN wins over +inf, which
/// wins over an all -inf row. An empty row has no finite logit.
LogitsCheck checkLogitsRow(const float *logits, size_t vocabSize);

/// processLogits' checks alone: fails when the row has NaN or +inf or no
/// finite logit, or a history token lies outside the vocabulary.
Status checkSampleRow(const float *logits, size_t vocabSize,
                      const SampleRow &row);

/// Greedy without penalties or logprobs: the token is the row's first
/// maximum as the model gave it (firstMaximum, after checkSampleRow), what
/// argmaxProcessed of the processed row gives without making it.
bool plainGreedy(const SamplingParams &params);
/// The token a draw with temperature, min-p, top-k and top-p alone (no
/// penalties) takes from one row with `uniform`: processLogits, then
/// drawProcessed. sampleRow draws the same with
/// philoxUniform(seed, position); a device sampler is held to this.
Expected<TokenId> drawWithUniform(const float *logits, size_t vocabSize,
                                  const SamplingParams &params, double uniform);

/// The lowest index among the largest entries of a checked row.
TokenId firstMaximum(const float *logits, size_t vocabSize);

/// The final logits of the distribution `row`'s token is drawn from:
/// penalties, then (unless greedy) temperature, min-p, top-k and top-p,
/// with masked tokens at -inf. Greedy rows keep temperature 1, so their
/// logprobs are those of the penalised model distribution.
/// Fails when the row has NaN or +inf or no finite logit, or a history
/// token lies outside the vocabulary.
Expected<std::vector<double>>
processLogits(const float *logits, size_t vocabSize, const SampleRow &row);

/// The greedy choice over processed logits: the lowest index among the
/// largest values.
TokenId argmaxProcessed(const std::vector<double> &processed);

/// Inverse-CDF draw over the unmasked tokens of processed logits, in
/// token-id order, with `uniform` in [0, 1). Never returns a masked token.
TokenId drawProcessed(const std::vector<double> &processed, double uniform);

/// Logprobs of `token` and the `numTop` most likely tokens under the
/// distribution of processed logits.
TokenLogprobs logprobsProcessed(const std::vector<double> &processed,
                                TokenId token, int32_t numTop);

/// Samples one token for one row (see processLogits for failures).
Expected<SampledToken> sampleRow(const float *logits, size_t vocabSize,
                                 const SampleRow &row);

/// Samples one token per row of `logits` ([rows.size(), vocabSize], row
/// major). Fails, naming the row, if any row fails.
Expected<std::vector<SampledToken>>
sampleBatch(const float *logits, size_t vocabSize,
            const std::vector<SampleRow> &rows);

} // namespace folio

#endif // FOLIO_RUNTIME_SAMPLER_SAMPLER_H
