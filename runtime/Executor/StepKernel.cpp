//===- StepKernel.cpp - The CPU kernel registry ---------------------------===//

#include "runtime/Executor/StepKernel.h"

namespace folio::exec {

Status StepContext::error(const std::string &message) const {
  std::string where = step.kind;
  if (!step.name.empty())
    where += " '" + step.name + "'";
  return Status::invalidArgument(where + ": " + message);
}

Status fromCpu(const StepContext &ctx, const cpu::Status &s) {
  return s.ok() ? Status::ok() : ctx.error(s.message());
}

const StepKernel *findCPUKernel(const std::string &kind) {
  for (const auto *table : {&elementwiseStepKernels(),
                            &dataMovementStepKernels(), &folioStepKernels()})
    for (const StepKernel &k : *table)
      if (kind == k.kind)
        return &k;
  return nullptr;
}

std::vector<std::string> cpuKernelKinds() {
  std::vector<std::string> kinds;
  for (const auto *table : {&elementwiseStepKernels(),
                            &dataMovementStepKernels(), &folioStepKernels()})
    for (const StepKernel &k : *table)
      kinds.push_back(k.kind);
  return kinds;
}

} // namespace folio::exec
