//===- EmitCuda.h - folioc --emit=cuda ---------------------------*- C++
//-*-===//
//
// Writes the CUDA kernels a compiled plan needs as self-contained .cu files
// (codegen/CUDA/Emitter.h), one per distinct kernel, for kernel engineers
// to read, diff and compile with NVRTC or nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIOC_EMITCUDA_H
#define FOLIO_TOOLS_FOLIOC_EMITCUDA_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::tools {

struct EmitCudaResult {
  /// File names written into the directory, in plan order.
  std::vector<std::string> files;
  /// Kernel kinds of the plan no CUDA generator covers yet (each once).
  std::vector<std::string> notGenerated;
};

/// Writes `<kernel>.cu` into `dir` (created if needed) for every kv_write
/// and paged_attention step of the plan's forward entry; `arch` (one of
/// codegen/CUDA's supportedArchs()) is recorded in each file.
Status emitCudaKernels(const plan::Plan &plan, const std::string &arch,
                       const std::string &dir, EmitCudaResult &result);

} // namespace folio::tools

#endif // FOLIO_TOOLS_FOLIOC_EMITCUDA_H
