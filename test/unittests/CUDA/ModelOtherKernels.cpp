//===- ModelOtherKernels.cpp - The models' other kernels ------------------===//
//
// The models' kernels besides kv_write and attention (row programs,
// rotary, gathers, samplers, linear), which GenerateModelKernels writes at
// build time, compiled as host C++ with their table (ModelKernelTable.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

#include <ModelOtherKernels.inc>
