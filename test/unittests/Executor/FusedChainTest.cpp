//===- FusedChainTest.cpp - Fused pointwise chains vs step by step --------===//
//
// runPointwiseChain must give bitwise what the chain's steps give run one
// by one, on every chunking (several chunks, rows longer than a chunk,
// rows that do not divide it), with intermediates kept in scratch or
// materialised, and must leave every form it does not take to the steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/FusedKernels.h"
#include "runtime/Executor/StepKernel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace folio;
using namespace folio::exec;

namespace {

Tensor random(Shape shape, std::mt19937 &rng) {
  Tensor t = Tensor::allocate(ElemType::F32, std::move(shape));
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.as<float>()[i] = d(rng);
  return t;
}

bool sameBytes(const Tensor &a, const Tensor &b) {
  return a.shape == b.shape && a.type == b.type &&
         std::memcmp(a.data, b.data, a.bytes()) == 0;
}

/// A plan of one kernel over `inputs` (values 0..n-1) and the chain's
/// steps, each {kind, spelling, operands}; step i's result is value n + i.
struct Chain {
  plan::Plan plan;
  std::vector<Tensor> inputs;

  void step(const char *kind, const char *spelling,
            std::vector<int32_t> operands) {
    plan::Step s;
    s.kind = kind;
    s.attrs = {{"kind", std::string(spelling)}};
    s.operands = std::move(operands);
    s.results = {int32_t(inputs.size() + plan.steps.size())};
    plan.steps.push_back(s);
  }

  /// Runs the chain fused (or step by step) and returns every value.
  std::vector<Tensor> run(bool fused, std::vector<int32_t> live, bool &done) {
    for (size_t i = 0; i < inputs.size() + plan.steps.size(); ++i)
      if (plan.values.size() <= i)
        plan.values.push_back({});
    plan::Kernel k{"elementwise", 0, int32_t(plan.steps.size()), {}, live, {}};
    std::vector<Tensor> values = inputs;
    values.resize(inputs.size() + plan.steps.size());
    cpu::ThreadPool &pool = cpu::ThreadPool::global();
    std::vector<cpu::KVCacheView *> caches(values.size(), nullptr);
    auto runStep = [&](size_t i) -> Status {
      const plan::Step &s = plan.steps[i];
      const StepKernel *kernel = findCPUKernel(s.kind);
      std::unique_ptr<StepState> state;
      PrepareContext prep{s, plan, values};
      if (kernel->prepare)
        if (Status st = kernel->prepare(prep, state); !st)
          return st;
      StepContext ctx{s, values, caches, state.get(), pool};
      return kernel->run(ctx);
    };
    FusedContext ctx{plan, k, values, pool, runStep, [&](int32_t id) {
                       return std::find(live.begin(), live.end(), id) !=
                              live.end();
                     }};
    done = false;
    if (fused) {
      EXPECT_TRUE(isPointwiseChain(plan, 0, int32_t(plan.steps.size())));
      EXPECT_TRUE(runPointwiseChain(ctx, 0, int32_t(plan.steps.size()), done));
    }
    if (!done) {
      for (size_t i = 0; i < plan.steps.size(); ++i) {
        EXPECT_TRUE(runStep(i));
      }
    }
    return values;
  }
};

/// Runs `c` both ways and checks every live value bitwise.
void expectSame(Chain &c, std::vector<int32_t> live, bool expectFused) {
  bool done = false, unused = false;
  std::vector<Tensor> fused = c.run(true, live, done);
  std::vector<Tensor> steps = c.run(false, live, unused);
  EXPECT_EQ(done, expectFused);
  for (int32_t id : live)
    EXPECT_TRUE(sameBytes(fused[size_t(id)], steps[size_t(id)])) << id;
}

// A written-out GELU with a bias row vector: rows of 5000 (longer than a
// 4096-element chunk), three rows; only the result is kept.
TEST(FusedChain, GeluWithRowBiasOnLongRows) {
  std::mt19937 rng(1);
  Chain c;
  c.inputs = {random({3, 5000}, rng), random({5000}, rng), random({}, rng),
              random({1}, rng)};
  c.step("binary", "add", {0, 1}); // 4 = x + bias
  c.step("binary", "mul", {4, 2}); // 5 = 0.5 * x
  c.step("binary", "pow", {4, 3}); // 6 = x^c
  c.step("unary", "tanh", {6});    // 7
  c.step("binary", "add", {4, 7}); // 8
  c.step("binary", "mul", {5, 8}); // 9
  expectSame(c, {9}, true);
}

// Rows that do not divide the chunk (7 x 1000: four rows a chunk), an
// outside operand of the chain's shape, intermediates kept live too.
TEST(FusedChain, RowsNotDividingTheChunkAndLiveIntermediates) {
  std::mt19937 rng(2);
  Chain c;
  c.inputs = {random({7, 1000}, rng), random({1000}, rng),
              random({7, 1000}, rng)};
  c.step("binary", "sub", {0, 1}); // 3
  c.step("unary", "sigmoid", {3}); // 4
  c.step("binary", "max", {4, 2}); // 5
  c.step("binary", "div", {5, 1}); // 6
  expectSame(c, {3, 6}, true);
  // Many chunks without row vectors.
  Chain d;
  d.inputs = {random({9000}, rng), random({9000}, rng)};
  d.step("binary", "min", {0, 1});
  d.step("unary", "erf", {2});
  d.step("unary", "neg", {3});
  expectSame(d, {4}, true);
}

// Forms the fused evaluator leaves to the steps: a unary op on a scalar
// that a later op broadcasts, and a step whose operands are all scalars.
TEST(FusedChain, FallsBackWhereAStepChangesShape) {
  std::mt19937 rng(3);
  Chain c;
  c.inputs = {random({1}, rng), random({8}, rng)};
  c.step("unary", "neg", {0});     // 2: [1]
  c.step("binary", "mul", {2, 1}); // 3: [8]
  expectSame(c, {3}, false);
  Chain d;
  d.inputs = {random({1}, rng), random({}, rng), random({4, 4}, rng)};
  d.step("binary", "add", {0, 1}); // 3: [1], scalars only
  d.step("binary", "mul", {3, 2}); // 4: [4, 4]
  expectSame(d, {4}, false);
  // A scalar of higher rank than the chain raises the rank: steps.
  Chain e;
  e.inputs = {random({4}, rng), random({1, 1, 1}, rng)};
  e.step("binary", "mul", {0, 1});
  e.step("unary", "abs", {2});
  expectSame(e, {3}, false);
}

} // namespace
