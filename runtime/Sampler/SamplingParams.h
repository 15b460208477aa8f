//===- SamplingParams.h - Per-request sampling settings --------*- C++ -*-===//
//
// Field meanings follow the OpenAI API as vLLM implements it, so that the
// server maps request JSON onto this struct one to one.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SAMPLER_SAMPLINGPARAMS_H
#define FOLIO_RUNTIME_SAMPLER_SAMPLINGPARAMS_H

#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace folio {

/// The most top logprobs a request may ask for (OpenAI's limit).
inline constexpr int32_t kMaxLogprobs = 20;

struct SamplingParams {
  /// 0 selects greedy decoding (argmax); otherwise logits are divided by it.
  float temperature = 1.0f;
  /// Keep the k most likely tokens; 0 or -1 keeps all.
  int32_t topK = 0;
  /// Keep the smallest most-likely set whose probability reaches topP.
  float topP = 1.0f;
  /// Drop tokens less likely than minP times the most likely one.
  float minP = 0.0f;
  /// > 1 discourages any token seen in the prompt or output.
  float repetitionPenalty = 1.0f;
  /// Subtracted once from the logit of every token already generated.
  float presencePenalty = 0.0f;
  /// Subtracted per occurrence of a token in the output.
  float frequencyPenalty = 0.0f;
  /// Same seed, same prompt: same output, whatever else runs alongside.
  std::optional<uint64_t> seed;
  /// Generated-token limit; unset means up to the model's context length.
  std::optional<size_t> maxTokens;
  /// Tokens that end generation (kept in the output).
  std::vector<TokenId> stopTokenIds;
  /// Keep generating past the model's end-of-sequence token.
  bool ignoreEos = false;
  /// Report this many top alternatives (and the chosen token's logprob);
  /// unset reports nothing.
  std::optional<int32_t> logprobs;
  /// Independent samples of one prompt (parallel sampling).
  int32_t n = 1;

  bool isGreedy() const { return temperature == 0.0f; }

  /// Checks ranges and combinations; the message names the bad field and
  /// the accepted range. `vocabSize` bounds token ids when nonzero.
  Status validate(size_t vocabSize = 0) const;
};

} // namespace folio

#endif // FOLIO_RUNTIME_SAMPLER_SAMPLINGPARAMS_H
