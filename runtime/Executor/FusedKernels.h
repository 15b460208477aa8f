//===- FusedKernels.h - CPU implementations of fused plan kernels -*- C++ -*-//
//
// The compiler groups steps into kernels (folio-fuse); the CPU executor runs
// a kernel through one of these when it has an implementation of the
// kernel's kind whose form the steps match, and step by step otherwise.
// Each implementation gives bitwise the results of its steps run one by
// one (tested), so fusion changes speed, never tokens.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_FUSEDKERNELS_H
#define FOLIO_RUNTIME_EXECUTOR_FUSEDKERNELS_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/ThreadPool.h"
#include "runtime/Executor/StepKernel.h"
#include "runtime/Executor/Tensor.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <functional>
#include <vector>

namespace folio::exec {

/// What a fused implementation sees of one kernel.
struct FusedContext {
  const plan::Plan &plan;
  const plan::Kernel &kernel;
  std::vector<Tensor> &values;
  cpu::ThreadPool &pool;
  /// Runs plan step `i` as the unfused path does: for the parts of a
  /// kernel that have no fused form (a linear before its epilogue), and as
  /// the fallback when the run-time shapes do not fit the fused form.
  std::function<Status(size_t)> runStep;
  /// Whether `id` is read after this kernel (or returned): such values are
  /// materialised, the others may live in registers and scratch only.
  std::function<bool(int32_t)> isLive;
  /// The planned buffers (null: fresh tensors).
  const BufferArena *arena = nullptr;
  /// The first step the fused form covers (FusedKernel::prepare); the
  /// steps before it run one by one.
  int32_t fusedFirst = 0;

  Status error(const std::string &message) const;
};

struct FusedKernel {
  const char *kind;
  /// Whether the kernel's steps have the form `run` takes, decided once at
  /// load on the plan alone: the first step the fused form covers, or -1.
  int32_t (*prepare)(const plan::Plan &, const plan::Kernel &);
  Status (*run)(FusedContext &);
};

/// The fused implementation for `kernel`, or null; `fusedFirst` gets what
/// its prepare returned.
const FusedKernel *findFusedCPUKernel(const plan::Plan &plan,
                                      const plan::Kernel &kernel,
                                      int32_t *fusedFirst = nullptr);

/// ElementwiseOps.cpp: whether steps [first, end) are a chain the fused
/// pointwise evaluator takes (f32 binary/unary steps).
bool isPointwiseChain(const plan::Plan &plan, int32_t first, int32_t end);
/// Evaluates such a chain in one pass over its output, chunk by chunk;
/// values the chain makes and nothing later reads stay in scratch. Sets
/// `done` false, touching nothing, when an operand needs the general
/// broadcast (anything but the chain's shape, a scalar or a row vector).
Status runPointwiseChain(FusedContext &ctx, int32_t first, int32_t end,
                         bool &done);

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_FUSEDKERNELS_H
