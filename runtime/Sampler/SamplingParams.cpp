//===- SamplingParams.cpp - Per-request sampling settings -----------------===//

#include "runtime/Sampler/SamplingParams.h"

#include <cmath>
#include <sstream>

using namespace folio;

namespace {

template <typename T> std::string str(T value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

} // namespace

Status SamplingParams::validate(size_t vocabSize) const {
  if (!std::isfinite(temperature) || temperature < 0.0f)
    return Status::invalidArgument(
        "temperature must be a finite number >= 0 (0 = greedy), got " +
        str(temperature));
  if (topK < -1)
    return Status::invalidArgument(
        "top_k must be -1 or 0 (disabled) or at least 1, got " + str(topK));
  if (!(topP > 0.0f && topP <= 1.0f))
    return Status::invalidArgument("top_p must be in (0, 1], got " + str(topP));
  if (!(minP >= 0.0f && minP <= 1.0f))
    return Status::invalidArgument("min_p must be in [0, 1], got " + str(minP));
  if (!std::isfinite(repetitionPenalty) || repetitionPenalty <= 0.0f)
    return Status::invalidArgument(
        "repetition_penalty must be a finite number > 0, got " +
        str(repetitionPenalty));
  if (!(presencePenalty >= -2.0f && presencePenalty <= 2.0f))
    return Status::invalidArgument("presence_penalty must be in [-2, 2], got " +
                                   str(presencePenalty));
  if (!(frequencyPenalty >= -2.0f && frequencyPenalty <= 2.0f))
    return Status::invalidArgument(
        "frequency_penalty must be in [-2, 2], got " + str(frequencyPenalty));
  if (maxTokens && *maxTokens == 0)
    return Status::invalidArgument("max_tokens must be at least 1");
  if (logprobs && (*logprobs < 0 || *logprobs > kMaxLogprobs))
    return Status::invalidArgument("logprobs must be in [0, " +
                                   str(kMaxLogprobs) + "], got " +
                                   str(*logprobs));
  if (n < 1)
    return Status::invalidArgument("n must be at least 1, got " + str(n));
  if (n > 1 && isGreedy())
    return Status::invalidArgument(
        "n > 1 needs temperature > 0: greedy samples would all be equal");
  for (TokenId token : stopTokenIds)
    if (token < 0 || (vocabSize && static_cast<size_t>(token) >= vocabSize))
      return Status::invalidArgument(
          "stop_token_ids: " + str(token) + " is not a token id" +
          (vocabSize ? " (vocabulary size " + str(vocabSize) + ")" : ""));
  return Status::ok();
}
