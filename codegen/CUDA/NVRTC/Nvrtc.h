//===- Nvrtc.h - Compile generated kernels with NVRTC -----------*- C++ -*-===//
//
// Two variants, chosen by FOLIO_ENABLE_CUDA: NvrtcOn.cpp links the
// toolkit's NVRTC; NvrtcOff.cpp reports that this build has no CUDA, so
// callers can skip or fall back with a clear message.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_NVRTC_NVRTC_H
#define FOLIO_CODEGEN_CUDA_NVRTC_NVRTC_H

#include "codegen/CPU/Status.h"

#include <string>
#include <vector>

namespace folio::cuda {

/// What compiling one kernel for one arch produced. Resource counts come
/// from ptxas's verbose report; -1 where it gave none.
struct CompiledKernel {
  std::string name, arch;
  std::string ptx;
  std::vector<char> cubin;
  std::string log;
  int registers = -1;
  int spillStoreBytes = -1, spillLoadBytes = -1;
  int stackFrameBytes = -1;
  int sharedBytes = -1; ///< static shared memory
};

/// False in a build without CUDA (NvrtcOff.cpp).
bool nvrtcAvailable();

/// "major.minor" of the NVRTC in use, or "none".
std::string nvrtcVersion();

/// Compiles `source` (a generated kernel) for `arch` (supportedArchs()) to
/// PTX and a cubin. Extra options (e.g. "-DFOLIO_KERNEL_PORTABLE") are
/// passed on. A failure names the kernel and the arch and carries NVRTC's
/// log.
cpu::Status compileWithNvrtc(const std::string &kernelName,
                             const std::string &source, const std::string &arch,
                             CompiledKernel &out,
                             const std::vector<std::string> &options = {});

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_NVRTC_NVRTC_H
