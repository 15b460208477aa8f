//===- PtxasReport.h - Resource usage from ptxas's verbose log --*- C++ -*-===//
//
// NVRTC with --ptxas-options=-v appends ptxas's report to its log: per
// entry function a "Compiling entry function 'K' for 'sm_90a'" line, its
// "Function properties" (stack frame, spills) and a "Used N registers, ...
// smem" line; non-inlined device functions get properties of their own.
// Several entries share one log when a translation unit holds several
// kernels, so the figures are looked up by kernel name, never by the first
// match. Plain C++: the parser is tested on captured logs without CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_NVRTC_PTXASREPORT_H
#define FOLIO_CODEGEN_CUDA_NVRTC_PTXASREPORT_H

#include <string>

namespace folio::cuda {

/// One entry function's resources; -1 where the report gave no figure.
struct KernelResources {
  int registers = -1;
  int barriers = -1;
  int spillStoreBytes = -1, spillLoadBytes = -1;
  int stackFrameBytes = -1;
  int sharedBytes = -1; ///< static shared memory (0 when ptxas lists none)
};

/// The resources of entry function `kernel` in a ptxas report `log` (for
/// `arch` when non-empty). False when the log has no entry of that name
/// (and arch); `out` is then left as it was.
bool parsePtxasReport(const std::string &log, const std::string &kernel,
                      const std::string &arch, KernelResources &out);

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_NVRTC_PTXASREPORT_H
