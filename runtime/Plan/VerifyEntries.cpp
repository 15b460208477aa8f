//===- VerifyEntries.cpp - The verify entries of a plan -------------------===//

#include "runtime/Plan/VerifyEntries.h"

#include <string>

namespace folio::plan {
namespace {

/// What each of spec_verify's four operands must be (the order of
/// kVerifyInputNames), then its two results.
struct Slot {
  const char *name;
  ElemType type;
  size_t rank;
  bool vocabLast; ///< the last dim is V, every other -1
};

constexpr Slot kOperandSlots[4] = {{"target_logits", ElemType::F32, 3, true},
                                   {"draft_tokens", ElemType::I32, 2, false},
                                   {"draft_probs", ElemType::F32, 3, true},
                                   {"uniforms", ElemType::F32, 2, false}};
constexpr Slot kResultSlots[2] = {{"accepted", ElemType::I32, 1, false},
                                  {"tokens", ElemType::I32, 2, false}};

/// Which optional operands an entry takes, and its mode.
struct EntryForm {
  const char *name;
  const char *mode;
  bool draftProbs;
  bool uniforms;
};

constexpr EntryForm kForms[3] = {
    {kVerifyGreedyEntry, "greedy", false, false},
    {kVerifySampleEntry, "sample", true, true},
    {kVerifySampleOneHotEntry, "sample", false, true}};

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

class EntryChecker {
public:
  explicit EntryChecker(const Plan &plan)
      : plan(plan), owner(plan.values.size(), -1) {
    // Forward's values, so that no entry reads or writes one.
    auto mark = [&](int32_t id) {
      if (id >= 0 && size_t(id) < owner.size())
        owner[size_t(id)] = kForward;
    };
    for (const Argument &a : plan.inputs)
      mark(a.value);
    for (int32_t id : plan.outputs)
      mark(id);
    for (const Constant &c : plan.constants)
      mark(c.value);
    for (const Step &s : plan.steps) {
      for (int32_t id : s.operands)
        mark(id);
      for (int32_t id : s.results)
        mark(id);
    }
    for (size_t id = 0; id < plan.values.size(); ++id)
      if (plan.values[id].kind == ValueInfo::Kind::KVCache)
        owner[id] = kForward;
  }

  Status check(size_t index) {
    const Entry &e = plan.entries[index];
    where = "plan: entry '" + e.name + "'";
    const EntryForm *form = nullptr;
    for (const EntryForm &f : kForms)
      if (e.name == f.name)
        form = &f;
    if (!form)
      return fail(std::string(" is not an entry this runtime runs; entries "
                              "besides forward are ") +
                  kVerifyGreedyEntry + ", " + kVerifySampleEntry + " and " +
                  kVerifySampleOneHotEntry);
    for (size_t j = 0; j < index; ++j)
      if (plan.entries[j].name == e.name)
        return fail(" appears twice");
    if (e.steps.size() != 1)
      return fail(" has " + std::to_string(e.steps.size()) +
                  " steps; a verify entry is one spec_verify step");
    const Step &s = e.steps[0];
    where += " step '" + s.kind + "' ('" + s.name + "')";
    if (s.kind != "spec_verify")
      return fail(" is not a spec_verify step");
    std::string mode = s.getString("mode", "");
    if (mode != form->mode)
      return fail(" has mode '" + mode + "'; this entry verifies in '" +
                  form->mode + "' mode");
    if (s.operands.size() != 4 || s.results.size() != 2)
      return fail(" has " + std::to_string(s.operands.size()) +
                  " operands and " + std::to_string(s.results.size()) +
                  " results; spec_verify takes 4 (target_logits, "
                  "draft_tokens, draft_probs, uniforms; -1 when absent) and "
                  "returns 2 (accepted, tokens)");
    bool wanted[4] = {true, true, form->draftProbs, form->uniforms};
    size_t present = 0;
    int64_t vocab = 0;
    for (size_t i = 0; i < 4; ++i) {
      const Slot &slot = kOperandSlots[i];
      int32_t id = s.operands[i];
      if ((id >= 0) != wanted[i])
        return fail(std::string(wanted[i] ? " lacks" : " takes") + " " +
                    slot.name + ", which this entry " +
                    (wanted[i] ? "needs" : "does not take"));
      if (id < 0)
        continue;
      ++present;
      const Argument *input = nullptr;
      for (const Argument &a : e.inputs)
        if (a.value == id)
          input = &a;
      if (!input || input->name != slot.name)
        return fail(std::string(" reads value ") + std::to_string(id) +
                    " as its " + slot.name + ", which is not the entry's " +
                    slot.name + " input");
      if (Status st = checkValue(id, slot, index, vocab); !st)
        return st;
    }
    if (e.inputs.size() != present)
      return fail(" reads " + std::to_string(present) + " of the entry's " +
                  std::to_string(e.inputs.size()) +
                  " inputs; it must read "
                  "each once");
    if (s.results[0] == s.results[1])
      return fail(" writes one value as both accepted and tokens");
    for (int32_t r : s.results)
      for (int32_t o : s.operands)
        if (r == o)
          return fail(" writes value " + std::to_string(r) +
                      ", which it also reads");
    for (size_t i = 0; i < 2; ++i)
      if (Status st = checkValue(s.results[i], kResultSlots[i], index, vocab);
          !st)
        return st;
    if (e.outputs != s.results)
      return fail(" returns " +
                  dimsString({e.outputs.begin(), e.outputs.end()}) +
                  "; a verify entry returns its step's accepted and tokens "
                  "values " +
                  dimsString({s.results.begin(), s.results.end()}));
    return Status::ok();
  }

private:
  static constexpr int64_t kForward = -2;

  Status fail(const std::string &what) const {
    return Status::invalidArgument(where + what);
  }

  /// Value `id` in `slot`: in range, this entry's alone, and of the
  /// slot's type; the first vocabulary seen (target_logits') sets `vocab`,
  /// which later slots must repeat.
  Status checkValue(int32_t id, const Slot &slot, size_t entry,
                    int64_t &vocab) {
    std::string what =
        std::string(" ") + slot.name + " (value " + std::to_string(id) + ")";
    if (id < 0 || size_t(id) >= plan.values.size())
      return fail(what + " is out of range");
    int64_t &own = owner[size_t(id)];
    if (own == kForward)
      return fail(what + " belongs to forward; an entry's values are its own");
    if (own >= 0 && own != int64_t(entry))
      return fail(what + " belongs to entry '" +
                  plan.entries[size_t(own)].name +
                  "'; an entry's values are its own");
    own = int64_t(entry);
    const ValueInfo &v = plan.values[size_t(id)];
    bool ok = v.kind == ValueInfo::Kind::Tensor && v.type == slot.type &&
              v.dims.size() == slot.rank;
    std::string shape = "[";
    for (size_t d = 0; d < slot.rank; ++d) {
      bool isVocab = slot.vocabLast && d + 1 == slot.rank;
      int64_t got = d < v.dims.size() ? v.dims[d] : 0;
      shape += d ? ", " : "";
      if (!isVocab) {
        shape += "-1";
        ok = ok && got == -1;
      } else {
        shape += vocab > 0 ? std::to_string(vocab) : "V > 0";
        ok = ok && (vocab > 0 ? got == vocab : got > 0);
      }
    }
    shape += "]";
    if (!ok)
      return fail(
          what + " is " +
          (v.kind == ValueInfo::Kind::KVCache
               ? std::string("a KV cache")
               : std::string(elemTypeName(v.type)) + " " + dimsString(v.dims)) +
          "; it must be " + elemTypeName(slot.type) + " " + shape +
          " (-1: any sequence count or draft length)");
    if (slot.vocabLast && vocab == 0)
      vocab = v.dims.back();
    if (slot.vocabLast) {
      int64_t configVocab = plan.configValue("vocab", 0);
      if (configVocab != 0 && vocab != configVocab)
        return fail(what + " has the vocabulary " + std::to_string(vocab) +
                    " but the plan's config says " +
                    std::to_string(configVocab));
    }
    if (v.buffer != -1 || v.symbol != DimSymbol::None)
      return fail(what + " has a planned buffer or a dim symbol; an entry's "
                         "values are bound to the caller's arrays");
    return Status::ok();
  }

  const Plan &plan;
  std::string where;
  /// Per value: kForward, the index of the entry that uses it, or -1.
  std::vector<int64_t> owner;
};

} // namespace

Status validateEntries(const Plan &plan) {
  EntryChecker checker(plan);
  for (size_t i = 0; i < plan.entries.size(); ++i)
    if (Status st = checker.check(i); !st)
      return st;
  return Status::ok();
}

const char *verifyEntryName(bool sample, bool hasDraftProbs) {
  if (!sample)
    return kVerifyGreedyEntry;
  return hasDraftProbs ? kVerifySampleEntry : kVerifySampleOneHotEntry;
}

} // namespace folio::plan
