//===- VerifyEntriesTest.cpp - The plan's verify entries ------------------===//

#include "runtime/Plan/VerifyEntries.h"
#include "compiler/Plan/LowerToPlan.h"
#include "dialects/Folio/Transforms/Passes.h"
#include "runtime/Plan/PlanIO.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace folio;

namespace {

const plan::Plan &compiledLlama() {
  static const plan::Plan p = [] {
    auto r = mlir::folio::compileONNXToPlan(
        std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
    if (!r) {
      ADD_FAILURE() << llvm::toString(r.takeError());
      return plan::Plan();
    }
    return std::move(*r);
  }();
  return p;
}

plan::Entry &entryOf(plan::Plan &p, const char *name) {
  for (plan::Entry &e : p.entries)
    if (e.name == name)
      return e;
  ADD_FAILURE() << "no entry " << name;
  static plan::Entry none;
  return none;
}

/// The error of a serialise/parse round trip ("" when it loads).
std::string loadError(const plan::Plan &p) {
  auto r = plan::parsePlan(plan::serializePlan(p));
  return r ? std::string() : r.status().message();
}

// Tests that the compiler and the runtime spell the entries and their
// inputs alike: the lowering looks functions up by the plan's names, the
// pass creates them under the dialect's.
TEST(VerifyEntries, CompilerAndRuntimeAgreeOnNames) {
  EXPECT_EQ(mlir::folio::kVerifyGreedyEntry.str(), plan::kVerifyGreedyEntry);
  EXPECT_EQ(mlir::folio::kVerifySampleEntry.str(), plan::kVerifySampleEntry);
  EXPECT_EQ(mlir::folio::kVerifySampleOneHotEntry.str(),
            plan::kVerifySampleOneHotEntry);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(mlir::folio::kVerifyArgNames[i].str(),
              plan::kVerifyInputNames[i]);
  EXPECT_STREQ(plan::verifyEntryName(false, false), "verify_greedy");
  EXPECT_STREQ(plan::verifyEntryName(true, true), "verify_sample");
  EXPECT_STREQ(plan::verifyEntryName(true, false), "verify_sample_onehot");
}

// Tests that a compiled plan carries the three entries, each one
// spec_verify step over its named inputs with the model's vocabulary, and
// that they survive serialisation.
TEST(VerifyEntries, CompiledPlanCarriesThemThroughARoundTrip) {
  const plan::Plan &p = compiledLlama();
  ASSERT_EQ(p.entries.size(), 3u);
  struct Want {
    const char *name, *mode;
    std::vector<std::string> inputs;
    bool probs, uniforms;
  };
  Want want[] = {
      {"verify_greedy", "greedy", {"target_logits", "draft_tokens"}, 0, 0},
      {"verify_sample",
       "sample",
       {"target_logits", "draft_tokens", "draft_probs", "uniforms"},
       1,
       1},
      {"verify_sample_onehot",
       "sample",
       {"target_logits", "draft_tokens", "uniforms"},
       0,
       1}};
  for (size_t i = 0; i < 3; ++i) {
    const plan::Entry &e = p.entries[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(e.name, want[i].name);
    std::vector<std::string> names;
    for (const plan::Argument &a : e.inputs)
      names.push_back(a.name);
    EXPECT_EQ(names, want[i].inputs);
    ASSERT_EQ(e.steps.size(), 1u);
    const plan::Step &s = e.steps[0];
    EXPECT_EQ(s.kind, "spec_verify");
    EXPECT_EQ(s.name, want[i].name); // the pass names the op's location
    EXPECT_EQ(s.getString("mode", ""), want[i].mode);
    ASSERT_EQ(s.operands.size(), 4u);
    EXPECT_EQ(s.operands[0], e.inputs[0].value);
    EXPECT_EQ(s.operands[1], e.inputs[1].value);
    EXPECT_EQ(s.operands[2] >= 0, want[i].probs);
    EXPECT_EQ(s.operands[3] >= 0, want[i].uniforms);
    EXPECT_EQ(e.outputs, s.results);
    EXPECT_EQ(p.values[size_t(s.operands[0])].dims,
              (std::vector<int64_t>{-1, -1, 256}));
    EXPECT_EQ(p.values[size_t(s.results[1])].type, plan::ElemType::I32);
  }
  // Forward's steps and kernels are forward's alone.
  for (const plan::Step &s : p.steps)
    EXPECT_NE(s.kind, "spec_verify");

  auto r = plan::parsePlan(plan::serializePlan(p));
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->entries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r->entries[i].name, p.entries[i].name);
    EXPECT_EQ(r->entries[i].outputs, p.entries[i].outputs);
    ASSERT_EQ(r->entries[i].inputs.size(), p.entries[i].inputs.size());
    for (size_t j = 0; j < p.entries[i].inputs.size(); ++j) {
      EXPECT_EQ(r->entries[i].inputs[j].name, p.entries[i].inputs[j].name);
      EXPECT_EQ(r->entries[i].inputs[j].value, p.entries[i].inputs[j].value);
    }
    EXPECT_EQ(r->entries[i].steps[0].operands, p.entries[i].steps[0].operands);
    EXPECT_EQ(r->entries[i].steps[0].getString("mode", ""),
              p.entries[i].steps[0].getString("mode", ""));
  }
  EXPECT_EQ(plan::serializePlan(*r), plan::serializePlan(p));
}

// Tests that the metadata checksum covers the entries: a flipped bit in an
// entry's name is caught before parsing.
TEST(VerifyEntries, ChecksumCoversThem) {
  std::string bytes = plan::serializePlan(compiledLlama());
  size_t at = bytes.rfind("verify_sample_onehot");
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x01;
  auto r = plan::parsePlan(bytes);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("the metadata section"),
            std::string::npos)
      << r.status().message();
}

// Tests that corrupted entries are refused at load, each naming the entry,
// the step and what is wrong.
TEST(VerifyEntries, RejectsCorruptEntries) {
  const plan::Plan &good = compiledLlama();
  ASSERT_EQ(loadError(good), "");
  const plan::Entry &greedy = good.entries[0];
  int32_t logits = greedy.steps[0].operands[0];
  const std::string step = "plan: entry 'verify_greedy' step 'spec_verify' "
                           "('verify_greedy')";

  {
    SCOPED_TRACE("an operand out of range");
    plan::Plan p = good;
    plan::Entry &e = entryOf(p, "verify_greedy");
    e.inputs[0].value = int32_t(p.values.size()) + 5;
    e.steps[0].operands[0] = e.inputs[0].value;
    EXPECT_EQ(loadError(p), step + " target_logits (value " +
                                std::to_string(p.values.size() + 5) +
                                ") is out of range");
  }
  {
    SCOPED_TRACE("an operand that is not the entry's input");
    plan::Plan p = good;
    entryOf(p, "verify_greedy").steps[0].operands[1] = logits;
    EXPECT_EQ(loadError(p),
              step + " reads value " + std::to_string(logits) +
                  " as its draft_tokens, which is not the entry's "
                  "draft_tokens input");
  }
  {
    SCOPED_TRACE("a wrong kind");
    plan::Plan p = good;
    entryOf(p, "verify_greedy").steps[0].kind = "linear";
    EXPECT_EQ(loadError(p), "plan: entry 'verify_greedy' step 'linear' "
                            "('verify_greedy') is not a spec_verify step");
    entryOf(p, "verify_greedy").steps[0].kind = "onnx.Argmax";
    EXPECT_EQ(loadError(p), "plan: entry 'verify_greedy' step 'onnx.Argmax' "
                            "('verify_greedy') is not a spec_verify step");
  }
  {
    SCOPED_TRACE("a wrong dtype");
    plan::Plan p = good;
    p.values[size_t(logits)].type = plan::ElemType::BF16;
    EXPECT_EQ(loadError(p), step + " target_logits (value " +
                                std::to_string(logits) +
                                ") is bf16 [-1, -1, 256]; it must be f32 "
                                "[-1, -1, V > 0] (-1: any sequence count or "
                                "draft length)");
    plan::Plan q = good;
    int32_t tokens = entryOf(q, "verify_greedy").steps[0].results[1];
    q.values[size_t(tokens)].type = plan::ElemType::I64;
    EXPECT_EQ(loadError(q), step + " tokens (value " + std::to_string(tokens) +
                                ") is i64 [-1, -1]; it must be i32 [-1, -1] "
                                "(-1: any sequence count or draft length)");
  }
  {
    SCOPED_TRACE("draft probabilities of another vocabulary");
    plan::Plan p = good;
    int32_t probs = entryOf(p, "verify_sample").steps[0].operands[2];
    p.values[size_t(probs)].dims = {-1, -1, 128};
    EXPECT_EQ(loadError(p),
              "plan: entry 'verify_sample' step 'spec_verify' "
              "('verify_sample') draft_probs (value " +
                  std::to_string(probs) +
                  ") is f32 [-1, -1, 128]; it must be f32 [-1, -1, 256] (-1: "
                  "any sequence count or draft length)");
  }
  {
    SCOPED_TRACE("a vocabulary that is not the config's");
    plan::Plan p = good;
    p.values[size_t(logits)].dims = {-1, -1, 128};
    EXPECT_EQ(loadError(p), step + " target_logits (value " +
                                std::to_string(logits) +
                                ") has the vocabulary 128 but the plan's "
                                "config says 256");
  }
  {
    SCOPED_TRACE("a mode that is not the entry's");
    plan::Plan p = good;
    entryOf(p, "verify_greedy").steps[0].attrs = {
        {"mode", std::string("sample")}};
    EXPECT_EQ(loadError(p), step + " has mode 'sample'; this entry "
                                   "verifies in 'greedy' mode");
  }
  {
    SCOPED_TRACE("arity");
    plan::Plan p = good;
    entryOf(p, "verify_greedy").steps[0].operands.pop_back();
    EXPECT_EQ(loadError(p),
              step + " has 3 operands and 2 results; spec_verify takes 4 "
                     "(target_logits, draft_tokens, draft_probs, uniforms; -1 "
                     "when absent) and returns 2 (accepted, tokens)");
    plan::Plan q = good;
    entryOf(q, "verify_sample").steps[0].operands[3] = -1;
    EXPECT_EQ(loadError(q), "plan: entry 'verify_sample' step 'spec_verify' "
                            "('verify_sample') lacks uniforms, which this "
                            "entry needs");
  }
  {
    SCOPED_TRACE("values of forward");
    plan::Plan p = good;
    plan::Entry &e = entryOf(p, "verify_greedy");
    e.inputs[0].value = p.inputs[0].value; // forward's tokens
    e.steps[0].operands[0] = e.inputs[0].value;
    EXPECT_EQ(loadError(p), step + " target_logits (value " +
                                std::to_string(p.inputs[0].value) +
                                ") belongs to forward; an entry's values are "
                                "its own");
  }
  {
    SCOPED_TRACE("outputs that are not the results");
    plan::Plan p = good;
    plan::Entry &e = entryOf(p, "verify_greedy");
    std::swap(e.outputs[0], e.outputs[1]);
    EXPECT_NE(loadError(p).find(step + " returns ["), std::string::npos)
        << loadError(p);
  }
  {
    SCOPED_TRACE("unknown and repeated entries");
    plan::Plan p = good;
    p.entries[0].name = "verify_beam";
    EXPECT_EQ(loadError(p), "plan: entry 'verify_beam' is not an entry this "
                            "runtime runs; entries besides forward are "
                            "verify_greedy, verify_sample and "
                            "verify_sample_onehot");
    plan::Plan q = good;
    q.entries.push_back(q.entries[0]);
    EXPECT_EQ(loadError(q), "plan: entry 'verify_greedy' appears twice");
  }
  {
    SCOPED_TRACE("spec_verify in forward");
    plan::Plan p = good;
    p.steps[0].kind = "spec_verify";
    EXPECT_EQ(loadError(p), "plan: step '" + p.steps[0].name +
                                "' of forward is a spec_verify, which runs "
                                "in the verify entries only");
  }
}

} // namespace
