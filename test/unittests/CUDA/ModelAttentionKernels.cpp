//===- ModelAttentionKernels.cpp - The models' attention kernels ----------===//
//
// The kv_write and attention kernels of the models' plans, which
// GenerateModelKernels writes at build time, compiled as host C++ with
// their table (ModelKernelTable.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

#include <ModelAttentionKernels.inc>
