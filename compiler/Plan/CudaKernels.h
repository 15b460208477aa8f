//===- CudaKernels.h - A plan's CUDA kernels --------------------*- C++ -*-===//
//
// Which generated CUDA kernels a plan needs (one per distinct spec of its
// kv_write and paged_attention steps, with the steps each runs), and the
// ahead-of-time path: compile them with NVRTC for one arch (through the
// kernel cache) and embed cubin and PTX as the plan's device kernels.
// Plain C++ on the plan: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_PLAN_CUDAKERNELS_H
#define FOLIO_COMPILER_PLAN_CUDAKERNELS_H

#include "codegen/CUDA/Cache/KernelCache.h"
#include "codegen/CUDA/Emitter.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::compiler {

/// A generated kernel, its spec (for its launch geometry) and the forward
/// steps it runs.
struct PlannedCudaKernel {
  cuda::GeneratedKernel kernel;
  std::vector<int32_t> steps;
  cuda::AnyKernelSpec spec;
};

struct PlanCudaKernels {
  /// Distinct kernels in plan order (decode: main, then combine).
  std::vector<PlannedCudaKernel> kernels;
  /// Kernel kinds of the plan no CUDA generator covers yet (each once).
  std::vector<std::string> notGenerated;
};

/// Generates the kernels of every kv_write and paged_attention step. A
/// cache format the kernels do not take is an error naming the step.
Status collectCudaKernels(const plan::Plan &plan, PlanCudaKernels &out);

/// Every kernel the CUDA generators make for `plan`: collectCudaKernels'
/// (kv_write, paged attention) then collectCudaRowKernels' (norms,
/// elementwise and epilogue rows, rotary, gathers, samplers), and the plan
/// kernel kinds some part of which neither covers (each once).
Status collectAllCudaKernels(const plan::Plan &plan,
                             std::vector<PlannedCudaKernel> &kernels,
                             std::vector<std::string> &notGenerated);

/// What embedCudaKernels did, per kernel.
struct EmbeddedCudaKernel {
  std::string name;
  cuda::CacheOutcome cache = cuda::CacheOutcome::Disabled;
};

/// Compiles every kernel of collectAllCudaKernels that runs plan steps for
/// `arch` (through the cache) and appends each cubin and PTX
/// (NUL-terminated, so a driver loads it in place) to the blob as
/// plan.deviceKernels. The samplers run on the logits, outside the plan's
/// steps, and are not embedded. A compile failure
/// names the kernel and arch and carries NVRTC's log; a build without
/// CUDA is an error saying so.
Status embedCudaKernels(plan::Plan &plan, const std::string &arch,
                        const cuda::KernelCacheOptions &cache,
                        std::vector<EmbeddedCudaKernel> &embedded,
                        std::vector<std::string> &notGenerated);

} // namespace folio::compiler

#endif // FOLIO_COMPILER_PLAN_CUDAKERNELS_H
