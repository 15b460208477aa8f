//===- PlanRowPrograms.h - A plan kernel as a row program -------*- C++ -*-===//
//
// Norm and elementwise kernels of a plan become one fused row kernel
// (codegen/CUDA/RowProgram.h): the program built from the kernel's steps,
// and where each of its inputs lives.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_PLANROWPROGRAMS_H
#define FOLIO_RUNTIME_DEVICE_PLANROWPROGRAMS_H

#include "runtime/Device/PlanViews.h"

#include <functional>
#include <string>
#include <vector>

namespace folio::device {

/// Threads of a row kernel: about 8 elements each, at least a warp.
int rowThreads(int64_t dim);

/// Copies a strided view of a value into contiguous scratch (a launch
/// before the caller's), replacing the operand; false with `why` set.
using CopyFn = std::function<bool(int32_t, LaunchOperand &, std::string &)>;

/// The row program of plan kernel `kernel` (binary, unary, rms_norm,
/// layer_norm, reshape and slice steps over f32 rows) and where each input
/// lives, in the spec's input order; false with `why` set. Strided inputs
/// with rows of several of the kernel's go through `copy` first.
bool buildRowProgram(const PlanViews &views, const plan::Kernel &kernel,
                     cuda::RowKernelSpec &spec,
                     std::vector<LaunchOperand> &inputs, const CopyFn &copy,
                     std::string &why);

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_PLANROWPROGRAMS_H
