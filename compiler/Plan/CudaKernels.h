//===- CudaKernels.h - A plan's CUDA kernels --------------------*- C++ -*-===//
//
// Which generated CUDA kernels a plan needs (one per distinct spec among
// its launches, with the steps each runs), and the ahead-of-time path: compile
// them with NVRTC for one arch (through the kernel cache) and embed cubin and
// PTX as the plan's device kernels. Plain C++ on the plan: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_PLAN_CUDAKERNELS_H
#define FOLIO_COMPILER_PLAN_CUDAKERNELS_H

#include "codegen/CUDA/Cache/KernelCache.h"
#include "codegen/CUDA/Emitter.h"
#include "runtime/Device/PlanLaunches.h"
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

/// Every distinct kernel the launches of `plan` run
/// (runtime/Device/PlanLaunches.h: kv_write, attention, norms, elementwise
/// and epilogue rows, rotary, gathers, linears, casts), in launch order,
/// then the samplers; and the plan kernel kinds some part of which no
/// generator covers (each once, appended to `notGenerated`).
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
/// plan.deviceKernels. The samplers run on the logits after the forward;
/// they are embedded with the step that writes them (PlanLaunches.h).
/// A compile failure
/// names the kernel and arch and carries NVRTC's log; a build without
/// CUDA is an error saying so.
Status embedCudaKernels(plan::Plan &plan, const std::string &arch,
                        const cuda::KernelCacheOptions &cache,
                        std::vector<EmbeddedCudaKernel> &embedded,
                        std::vector<std::string> &notGenerated);

} // namespace folio::compiler

#endif // FOLIO_COMPILER_PLAN_CUDAKERNELS_H
