//===- HostilePlanTest.cpp - Plans the plan fuzzer broke the runtime with -===//
//
// One test per root cause the plan fuzzer found: the zoo llama compiled as
// folioc compiles it, with one field changed the way the crashing input
// changed it, must be refused with a message by validatePlan or by the CPU
// executor (load, forward or verify), never crash or run.
//
//===----------------------------------------------------------------------===//

#include "tools/fuzz/RunPlan.h"

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace folio;
using ::testing::HasSubstr;

namespace {

/// The zoo's `arch`/cached.onnx, compiled as folioc compiles it.
plan::Plan compileZoo(const std::string &arch) {
  auto p = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/" + arch + "/cached.onnx",
      {});
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return plan::Plan();
  }
  return std::move(*p);
}

const plan::Plan &llama() {
  static const plan::Plan compiled = compileZoo("llama");
  return compiled;
}

/// The first refusal of `p` (validation, load, forward, verify), or "".
std::string refusal(plan::Plan p) {
  if (Status s = plan::validatePlan(p); !s)
    return s.message();
  Status s =
      fuzz::runPlanOnce(std::make_shared<const plan::Plan>(std::move(p)));
  return s ? "" : s.message();
}

/// The index of the first forward step of `kind`.
size_t firstStep(const plan::Plan &p, const std::string &kind) {
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == kind)
      return i;
  ADD_FAILURE() << "no " << kind << " step";
  return 0;
}

TEST(HostilePlan, TheCompiledPlanRuns) { EXPECT_EQ(refusal(llama()), ""); }

// A step with another result count than its kind writes (kernels write
// result 0 without asking) is refused at load; so is a kv_write with a
// result. (A step missing its result is refused earlier: its readers would
// read a value nothing defines.)
TEST(HostilePlan, ResultCountsAreCheckedAtLoad) {
  plan::Plan p = llama();
  plan::ValueInfo extra;
  extra.dims = {1};
  int32_t id = p.addValue(extra);
  p.steps[firstStep(p, "reshape")].results.push_back(id);
  EXPECT_THAT(refusal(p), HasSubstr("2 results; a reshape step has 1"));

  p = llama();
  id = p.addValue(extra);
  p.steps[firstStep(p, "kv_write")].results.push_back(id);
  EXPECT_THAT(refusal(p), HasSubstr("1 results; a kv_write step has 0"));
}

// Steps are in dataflow order, each value defined once: a step reading a
// value defined later (which a fused pointwise chain once read as a null
// scalar) or redefining one is refused.
TEST(HostilePlan, StepsAreInDataflowOrder) {
  plan::Plan p = llama();
  size_t reshape = firstStep(p, "reshape");
  int32_t later = p.steps.back().results.at(0);
  p.steps[reshape].operands[0] = later;
  EXPECT_THAT(refusal(p),
              HasSubstr("reads value " + std::to_string(later) +
                        " before an input, a constant or an earlier step "
                        "defines it"));

  p = llama();
  int32_t first = p.steps[0].results.at(0);
  p.steps[reshape].results[0] = first;
  EXPECT_THAT(refusal(p), HasSubstr("writes value " + std::to_string(first) +
                                    ", which an input, a constant or an "
                                    "earlier step already defines"));

  p = llama();
  p.outputs[0] = p.addValue(p.values[size_t(p.outputs[0])]);
  EXPECT_THAT(refusal(p), HasSubstr("is not an input, a constant or a step's "
                                    "result"));
}

// A reshape whose target dims multiply past int64 is refused, not
// overflowed.
TEST(HostilePlan, ReshapeTargetsThatOverflowAreRefused) {
  plan::Plan p = llama();
  plan::Step &reshape = p.steps[firstStep(p, "reshape")];
  for (plan::Attr &a : reshape.attrs)
    if (a.name == "shape")
      a.value = std::vector<int64_t>{-1, (int64_t(1) << 62) + 1, 64};
  EXPECT_THAT(refusal(p), HasSubstr("bad target shape"));
}

// Buffers are the compiler's: each holds values of exactly its size and
// every one holds some, so a corrupt size never reaches the allocator.
TEST(HostilePlan, BufferSizesAreTheirValues) {
  plan::Plan p = llama();
  ASSERT_FALSE(p.buffers.empty());
  p.buffers[0].staticBytes = int64_t(1) << 31;
  EXPECT_THAT(refusal(p), HasSubstr("is in buffer 0 of 2147483648 bytes"));

  p = llama();
  p.buffers.push_back({int64_t(1) << 40, plan::DimSymbol::Tokens});
  EXPECT_THAT(refusal(p), HasSubstr("holds no value"));

  p = llama();
  for (plan::ValueInfo &v : p.values)
    if (v.buffer >= 0) {
      v.symbol = plan::DimSymbol::None;
      break;
    }
  EXPECT_THAT(refusal(p), HasSubstr("a buffer holds tensors of its own size"));
}

// Tensor dims are bounded as the compiler bounds node results.
TEST(HostilePlan, TensorSizesAreBounded) {
  plan::Plan p = llama();
  plan::ValueInfo big;
  big.dims = {int64_t(1) << 21, int64_t(1) << 20};
  p.addValue(big);
  EXPECT_THAT(refusal(p), HasSubstr("more than 1099511627776 (2^40) elements"));

  p = llama();
  plan::ValueInfo deep;
  deep.dims.assign(65, 1);
  p.addValue(deep);
  EXPECT_THAT(refusal(p), HasSubstr("has rank 65; a tensor has at most 64"));
}

/// Sets string attribute `name` of `step` to `value`.
void setString(plan::Step &step, const std::string &name,
               const std::string &value) {
  for (plan::Attr &a : step.attrs)
    if (a.name == name)
      a.value = value;
}

// Enum attributes are spelled as the dialect spells them; any other
// spelling is refused, not read as the default case.
TEST(HostilePlan, UnknownEnumSpellingsAreRefused) {
  plan::Plan p = llama();
  setString(p.steps[firstStep(p, "linear")], "weight_layout", "in_outt");
  EXPECT_THAT(refusal(p), HasSubstr("weight_layout 'in_outt' is not a weight "
                                    "layout (in_out, out_in)"));
  p = llama();
  setString(p.steps[firstStep(p, "gated_mlp")], "weight_layout", "");
  EXPECT_THAT(refusal(p), HasSubstr("weight_layout '' is not a weight layout"));
  p = llama();
  setString(p.steps[firstStep(p, "rotary")], "style", "interleave");
  EXPECT_THAT(refusal(p), HasSubstr("style 'interleave' is not a rotary style "
                                    "(half_split, interleaved)"));
  p = llama();
  for (plan::Attr &a : p.steps[firstStep(p, "paged_attention")].attrs)
    if (a.name == "causal")
      a.value = int64_t(5);
  EXPECT_THAT(refusal(p), HasSubstr("causal 5 is not a flag"));
}

// A linear's bias has one element per output feature: a bias operand wired
// to a smaller constant is refused instead of read past its end.
TEST(HostilePlan, BiasSizeIsChecked) {
  plan::Plan p = compileZoo("gpt2");
  plan::Step *linear = nullptr;
  for (plan::Step &s : p.steps)
    if (s.kind == "linear" && s.operands.size() > 2 && s.operands[2] >= 0)
      linear = &s;
  ASSERT_NE(linear, nullptr);
  int32_t smallest = -1;
  for (const plan::Constant &c : p.constants)
    if (p.values[size_t(c.value)].type == plan::ElemType::F32 &&
        (smallest < 0 || c.bytes < p.constants[size_t(smallest)].bytes))
      smallest = int32_t(&c - p.constants.data());
  ASSERT_GE(smallest, 0);
  linear->operands[2] = p.constants[size_t(smallest)].value;
  EXPECT_THAT(refusal(p), HasSubstr("bias must be a constant f32 tensor of"));
}

} // namespace

// A KV cache has no tensor: an elementwise step reading one read a null
// pointer (found by the plan fuzzer).
TEST(HostilePlan, OnlyCacheOperandsNameACache) {
  plan::Plan p = llama();
  int32_t cache = -1;
  for (size_t id = 0; id < p.values.size() && cache < 0; ++id)
    if (p.values[id].kind == plan::ValueInfo::Kind::KVCache)
      cache = int32_t(id);
  ASSERT_GE(cache, 0);
  plan::Step &binary = p.steps[firstStep(p, "binary")];
  ASSERT_GE(binary.operands.size(), 2u);
  binary.operands[1] = cache;
  EXPECT_THAT(refusal(p),
              HasSubstr("reads the KV cache " + std::to_string(cache) +
                        " as operand 1; only kv_write (operand 0) and "
                        "paged_attention (operand 1) take a cache"));
}
