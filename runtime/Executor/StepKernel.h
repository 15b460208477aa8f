//===- StepKernel.h - How an executor runs one kind of plan step -*- C++
//-*-===//
//
// A CPU step kernel is a `run` function over the step's operand tensors plus
// an optional `prepare` that builds per-step state once at load (packed
// weights). Kernels are found by the step's kind string; a plan with a kind
// no kernel implements is refused at load, never mid-generation.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_STEPKERNEL_H
#define FOLIO_RUNTIME_EXECUTOR_STEPKERNEL_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/ThreadPool.h"
#include "runtime/Executor/Tensor.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace folio::exec {

/// State a kernel keeps between steps (packed weights, tables).
struct StepState {
  virtual ~StepState() = default;
};

/// The executor's storage for the plan's buffers (Plan::buffers), sized for
/// the current step's token, row and sequence counts.
struct BufferArena {
  const plan::Plan *plan = nullptr;
  std::vector<std::shared_ptr<void>> storage;
  std::vector<size_t> capacity;

  /// A tensor for value `id` in the buffer the compiler planned for it when
  /// one is planned and large enough, else a fresh one.
  Tensor make(int32_t id, ElemType type, Shape shape) const;
  /// Grows each buffer to its size for this step.
  void size(int64_t tokens, int64_t rows, int64_t seqs);
};

/// Collects, per linear weight group, the largest |x| of each input column
/// (Executor::recordLinearInputs). Steps call record() with the rows they
/// are about to multiply; safe to call from several threads.
class LinearInputRecorder {
public:
  void record(int32_t step, int32_t operand, const float *x, int64_t rows,
              int64_t k);
  plan::LinearInputAbsMax absMax() const;

private:
  mutable std::mutex mu;
  plan::LinearInputAbsMax values;
};

/// The run-time environment one step sees.
struct StepContext {
  const plan::Step &step;
  std::vector<Tensor> &values;
  /// Per value id: the KV cache bound to it (null for tensors).
  std::vector<cpu::KVCacheView *> &caches;
  StepState *state;
  cpu::ThreadPool &pool;
  /// Where GEMM-like kernels add the floating-point operations they do.
  double flops = 0;
  /// How the executor stores linear weights: kernels may trade exactness
  /// for speed where the weights already did (bf16 attention products).
  cpu::DType weightStorage = cpu::DType::F32;
  /// The step's index in the plan.
  int32_t stepIndex = -1;
  /// Non-null while calibrating: linear kinds record their inputs here.
  LinearInputRecorder *linearInputs = nullptr;

  size_t numOperands() const { return step.operands.size(); }
  bool has(size_t i) const {
    return i < step.operands.size() && step.operands[i] >= 0;
  }
  const Tensor &in(size_t i) const { return values[size_t(step.operands[i])]; }
  cpu::KVCacheView *cache(size_t i) const {
    return caches[size_t(step.operands[i])];
  }
  void setResult(size_t i, Tensor t) {
    values[size_t(step.results[i])] = std::move(t);
  }
  /// Storage for result `i` (contents unspecified): its planned buffer
  /// where the executor has one, else a fresh tensor.
  Tensor output(size_t i, ElemType type, Shape shape) const {
    return arena ? arena->make(step.results[i], type, std::move(shape))
                 : Tensor::empty(type, std::move(shape));
  }
  const BufferArena *arena = nullptr;
  Status error(const std::string &message) const;
};

/// Load-time view of a step: its constant operands are already bound.
struct PrepareContext {
  const plan::Step &step;
  const plan::Plan &plan;
  const std::vector<Tensor> &values; ///< constants bound, others empty
  /// Storage for packed linear weights (F32 or BF16).
  cpu::DType weightStorage = cpu::DType::F32;
};

/// State of a step that holds packed linear weights.
struct WeightState : StepState {
  /// Bytes of weights one token's pass through this step reads.
  virtual int64_t weightBytes() const = 0;
};

using RunFn = Status (*)(StepContext &);
using PrepareFn = Status (*)(const PrepareContext &,
                             std::unique_ptr<StepState> &);

struct StepKernel {
  const char *kind;
  RunFn run;
  PrepareFn prepare; ///< may be null
  /// Minimum and maximum operand counts (a cheap load-time arity check).
  int minOperands;
  int maxOperands;
  /// The results every step of the kind has (kernels write them without
  /// asking).
  int numResults = 1;
};

/// The CPU kernel for `kind`, or null.
const StepKernel *findCPUKernel(const std::string &kind);

/// Every kind the CPU executor runs (for messages and docs).
std::vector<std::string> cpuKernelKinds();

// The tables, one per file.
const std::vector<StepKernel> &elementwiseStepKernels();
const std::vector<StepKernel> &dataMovementStepKernels();
const std::vector<StepKernel> &folioStepKernels();

/// Converts a kernel library status.
Status fromCpu(const StepContext &ctx, const cpu::Status &s);

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_STEPKERNEL_H
