//===- RunVerify.cpp - The CPU executor's verify entries ------------------===//

#include "runtime/Executor/RunVerify.h"

#include "runtime/Plan/VerifyEntries.h"

#include <string>

namespace folio::exec {
namespace {

/// What the entry verifies, for messages.
const char *purpose(const std::string &entry) {
  if (entry == plan::kVerifyGreedyEntry)
    return "greedy verification";
  if (entry == plan::kVerifySampleEntry)
    return "sampled verification with draft probabilities";
  return "sampled verification of one-hot drafts (no draft probabilities)";
}

} // namespace

cpu::SpecVerifyArgs specVerifyArgs(const VerifyBatch &b,
                                   std::vector<int32_t> &accepted,
                                   std::vector<int32_t> &tokens) {
  accepted.assign(size_t(b.numSeqs), 0);
  tokens.assign(size_t(b.numSeqs * (b.numDraft + 1)), -1);
  cpu::SpecVerifyArgs args;
  args.numSeqs = b.numSeqs;
  args.numDraft = b.numDraft;
  args.vocab = b.vocab;
  args.targetLogits = b.targetLogits;
  args.draftTokens = b.draftTokens;
  args.draftProbs = b.draftProbs;
  args.uniforms = b.uniforms;
  args.accepted = accepted.data();
  args.tokens = tokens.data();
  return args;
}

Status runVerifyEntry(const plan::Plan &plan, const VerifyBatch &b,
                      std::vector<int32_t> &accepted,
                      std::vector<int32_t> &tokens, cpu::ThreadPool &pool) {
  std::string name = plan::verifyEntryName(b.sample, b.draftProbs != nullptr);
  const plan::Entry *entry = plan.findEntry(name);
  if (!entry)
    return Status::invalidArgument(
        "the plan has no '" + name + "' entry, which " + purpose(name) +
        " runs; folioc compiles it into every plan (folio-speculative): "
        "recompile the model with folioc");
  if (!b.sample && (b.draftProbs || b.uniforms))
    return Status::invalidArgument(
        "greedy verification takes no draft probabilities or uniforms (it "
        "matches the target's argmax); set VerifyBatch::sample to verify by "
        "rejection sampling");
  std::string where = "verify entry '" + name + "'";
  const plan::Step &step = entry->steps.front();
  const plan::ValueInfo &logits = plan.values[size_t(step.operands[0])];
  int64_t vocab = logits.dims.back();
  if (b.vocab != vocab)
    return Status::invalidArgument(
        where + ": the batch's vocab is " + std::to_string(b.vocab) +
        " but the plan's target_logits are [S, K+1, " + std::to_string(vocab) +
        "]");
  if (b.numSeqs < 0 || b.numDraft < 0)
    return Status::invalidArgument(
        where + ": " + std::to_string(b.numSeqs) + " sequences of " +
        std::to_string(b.numDraft) + " drafts; both counts must be >= 0");
  int64_t rows = 0, logitsElems = 0, tokenElems = 0;
  if (__builtin_mul_overflow(b.numSeqs, b.numDraft + 1, &rows) ||
      __builtin_mul_overflow(rows, vocab, &logitsElems) ||
      __builtin_mul_overflow(b.numSeqs, b.numDraft, &tokenElems))
    return Status::invalidArgument(
        where + ": " + std::to_string(b.numSeqs) + " sequences of " +
        std::to_string(b.numDraft) + " drafts overflow the array sizes");
  struct Array {
    const char *name;
    const void *data;
    int64_t elems;
  };
  for (Array a : {Array{"targetLogits", b.targetLogits, logitsElems},
                  Array{"draftTokens", b.draftTokens, tokenElems},
                  Array{"uniforms", b.uniforms, b.sample ? rows : 0}})
    if (a.elems > 0 && !a.data)
      return Status::invalidArgument(where + ": VerifyBatch::" + a.name +
                                     " is null but must hold " +
                                     std::to_string(a.elems) + " elements");

  cpu::SpecVerifyArgs args = specVerifyArgs(b, accepted, tokens);
  // validateEntries has matched the operands to the mode: draft_probs and
  // uniforms are bound exactly where the entry has them.
  args.draftProbs = step.operands[2] >= 0 ? b.draftProbs : nullptr;
  args.uniforms = step.operands[3] >= 0 ? b.uniforms : nullptr;
  std::string mode = step.getString("mode", "");
  cpu::Status st = mode == "greedy" ? cpu::specVerifyGreedy(args, pool)
                                    : cpu::specVerifySample(args, pool);
  if (!st)
    return Status::invalidArgument(where + " (step '" + step.name +
                                   "'): " + st.message());
  return Status::ok();
}

} // namespace folio::exec
