//===- CudaRowKernels.h - A plan's other CUDA kernels -----------*- C++ -*-===//
//
// The generated CUDA kernels of a plan's other kernels (CudaKernels.h has
// kv_write and paged decode): prefill / mixed-batch attention for each
// paged_attention step, fused row programs (codegen/CUDA/RowProgram.h)
// built from the steps of norm and elementwise kernels, rotary, embedding,
// gather_rows, linear over stored weights (a gated MLP: its stacked gate
// and up GEMM, the gated activation, the down GEMM), and the samplers over
// the logits. Plain C++ on the plan: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_PLAN_CUDAROWKERNELS_H
#define FOLIO_COMPILER_PLAN_CUDAROWKERNELS_H

#include "codegen/CUDA/KernelSpec.h"
#include "compiler/Plan/CudaKernels.h"

#include <string>
#include <vector>

namespace folio::compiler {

struct PlanCudaRowKernels {
  /// Distinct kernels in plan order, each with the steps it runs (none for
  /// the samplers, which run on the logits).
  std::vector<PlannedCudaKernel> kernels;
  /// Kernel kinds every kernel of which these generators cover.
  std::vector<std::string> generatedKinds;
  /// Kernel kinds with a kernel (or a part of one) they do not cover,
  /// each once: GEMMs over weights not stored packed, casts, general
  /// broadcasts.
  std::vector<std::string> notGenerated;
};

/// Generates the kernels above. A step the generators take but whose
/// attributes they refuse (a cache type, a shape) is an error naming it.
Status collectCudaRowKernels(const plan::Plan &plan, PlanCudaRowKernels &out);

/// The row program of plan kernel `kernel` (norm and elementwise kernels:
/// binary, unary, rms_norm, layer_norm and reshape steps over f32 rows),
/// or false with `why` set.
bool buildRowProgram(const plan::Plan &plan, const plan::Kernel &kernel,
                     cuda::RowKernelSpec &spec, std::string &why);

} // namespace folio::compiler

#endif // FOLIO_COMPILER_PLAN_CUDAROWKERNELS_H
