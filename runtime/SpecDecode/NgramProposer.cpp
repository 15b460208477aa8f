//===- NgramProposer.cpp - Prompt lookup as a proposer --------------------===//

#include "runtime/SpecDecode/NgramProposer.h"

#include <algorithm>
#include <memory>
#include <string>

namespace folio::spec {

Expected<std::unique_ptr<NgramProposer>> NgramProposer::create(size_t minN,
                                                               size_t maxN) {
  if (minN < 1 || maxN < minN)
    return Status::invalidArgument(
        "n-gram lookup needs 1 <= --ngram-prompt-lookup-min (" +
        std::to_string(minN) + ") <= --ngram-prompt-lookup-max (" +
        std::to_string(maxN) + ")");
  return std::unique_ptr<NgramProposer>(new NgramProposer(minN, maxN));
}

std::vector<TokenId> NgramProposer::lookup(const std::vector<TokenId> &tokens,
                                           size_t k) const {
  size_t len = tokens.size();
  // Longer n-grams first: a longer match predicts the continuation better.
  for (size_t n = std::min(maxN, len > 0 ? len - 1 : 0); n >= minN; --n) {
    const TokenId *suffix = tokens.data() + (len - n);
    // The most recent earlier occurrence: text nearby is the likeliest to
    // repeat. `start + n < len` keeps at least one token to propose.
    for (size_t start = len - n; start-- > 0;) {
      if (!std::equal(suffix, suffix + n, tokens.data() + start))
        continue;
      // What followed, continued past the end of the sequence by the
      // proposal itself: a match this close repeats with period len - n -
      // start, and a model that has fallen into a loop keeps going round
      // it (stopping at the end would cap a period-p loop at p drafts).
      size_t from = start + n;
      std::vector<TokenId> out;
      out.reserve(k);
      for (size_t i = 0; i < k; ++i) {
        size_t at = from + i;
        out.push_back(at < len ? tokens[at] : out[at - len]);
      }
      return out;
    }
  }
  return {};
}

Status NgramProposer::propose(const std::vector<ProposeInput> &inputs, size_t k,
                              std::vector<Proposal> &out) {
  out.assign(inputs.size(), Proposal());
  for (size_t i = 0; i < inputs.size(); ++i)
    out[i].tokens = lookup(*inputs[i].tokens, std::min(k, inputs[i].maxDrafts));
  return Status::ok();
}

} // namespace folio::spec
