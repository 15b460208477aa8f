//===- RunStep.h - Run one executor step in a test --------------*- C++ -*-===//

#ifndef FOLIO_TEST_UNITTESTS_EXECUTOR_RUNSTEP_H
#define FOLIO_TEST_UNITTESTS_EXECUTOR_RUNSTEP_H

#include "runtime/Executor/StepKernel.h"

#include <memory>
#include <string>
#include <vector>

namespace folio::exec::test {

/// Runs one step of `kind` with operand i = inputs[i] and `numResults`
/// results, which land in `out` (default tensors where the step failed).
inline Status runStep(const std::string &kind, std::vector<Tensor> inputs,
                      std::vector<Tensor> &out,
                      std::vector<plan::Attr> attrs = {}, size_t numResults = 1,
                      cpu::ThreadPool &pool = cpu::ThreadPool::global()) {
  const StepKernel *k = findCPUKernel(kind);
  if (!k)
    return Status::notFound("no kernel " + kind);
  plan::Step step;
  step.kind = kind;
  step.attrs = std::move(attrs);
  std::vector<Tensor> env = std::move(inputs);
  for (size_t i = 0; i < env.size(); ++i)
    step.operands.push_back(int32_t(i));
  for (size_t i = 0; i < numResults; ++i) {
    step.results.push_back(int32_t(env.size()));
    env.emplace_back();
  }
  std::vector<cpu::KVCacheView *> caches(env.size(), nullptr);
  // Kinds resolved at load (an elementwise op's kind) prepare as the
  // executor's load does.
  std::unique_ptr<StepState> state;
  if (k->prepare) {
    static const plan::Plan emptyPlan;
    PrepareContext prep{step, emptyPlan, env};
    if (Status s = k->prepare(prep, state); !s)
      return s;
  }
  StepContext ctx{step, env, caches, state.get(), pool};
  Status s = k->run(ctx);
  out.assign(env.end() - long(numResults), env.end());
  return s;
}

} // namespace folio::exec::test

#endif // FOLIO_TEST_UNITTESTS_EXECUTOR_RUNSTEP_H
