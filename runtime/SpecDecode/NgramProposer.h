//===- NgramProposer.h - Prompt lookup as a proposer ------------*- C++ -*-===//
//
// Guesses that text repeats: the sequence's last n tokens (n from
// maxN down to minN) are looked up earlier in the sequence, and the tokens
// that followed the most recent earlier occurrence are proposed; where they
// run into the end of the sequence, the repeat continues (a loop of period
// p proposes k tokens, not p). It costs
// no model and pays off where the output copies the prompt (editing code,
// extracting, summarising with quotes). vLLM calls it prompt lookup
// (--ngram-prompt-lookup-min/max).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_SPECDECODE_NGRAMPROPOSER_H
#define FOLIO_RUNTIME_SPECDECODE_NGRAMPROPOSER_H

#include "runtime/SpecDecode/Proposer.h"

namespace folio::spec {

class NgramProposer final : public Proposer {
public:
  /// Fails unless 1 <= minN <= maxN.
  static Expected<std::unique_ptr<NgramProposer>> create(size_t minN,
                                                         size_t maxN);

  const char *method() const override { return "ngram"; }
  Status propose(const std::vector<ProposeInput> &inputs, size_t k,
                 std::vector<Proposal> &out) override;
  void release(const RequestId &) override {}

  /// The lookup for one sequence (exposed for tests).
  std::vector<TokenId> lookup(const std::vector<TokenId> &tokens,
                              size_t k) const;

private:
  NgramProposer(size_t minN, size_t maxN) : minN(minN), maxN(maxN) {}
  size_t minN, maxN;
};

} // namespace folio::spec

#endif // FOLIO_RUNTIME_SPECDECODE_NGRAMPROPOSER_H
