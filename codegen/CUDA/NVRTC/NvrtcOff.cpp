//===- NvrtcOff.cpp - NVRTC in a build without CUDA -----------------------===//

#include "codegen/CUDA/NVRTC/Nvrtc.h"

namespace folio::cuda {

bool nvrtcAvailable() { return false; }

std::string nvrtcVersion() { return "none"; }

cpu::Status compileWithNvrtc(const std::string &kernelName, const std::string &,
                             const std::string &arch, CompiledKernel &,
                             const std::vector<std::string> &) {
  return cpu::Status::error(
      "cannot compile kernel " + kernelName + " for " + arch +
      ": this build has no CUDA toolkit (configure with FOLIO_ENABLE_CUDA=ON "
      "and the toolkit installed)");
}

} // namespace folio::cuda
