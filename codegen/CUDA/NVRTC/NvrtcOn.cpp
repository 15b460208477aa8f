//===- NvrtcOn.cpp - NVRTC from the CUDA toolkit --------------------------===//

#include "codegen/CUDA/NVRTC/Nvrtc.h"

#include "codegen/CUDA/KernelSpec.h"
#include "codegen/CUDA/NVRTC/PtxasReport.h"

#include <nvrtc.h>

namespace folio::cuda {

namespace {

/// The kernel's figures from ptxas's report in the log; they stay -1 if
/// the report has no entry of that name (a mangled, non-extern "C" one).
void parseResources(CompiledKernel &k) {
  KernelResources r;
  if (!parsePtxasReport(k.log, k.name, k.arch, r))
    return;
  k.registers = r.registers;
  k.spillStoreBytes = r.spillStoreBytes;
  k.spillLoadBytes = r.spillLoadBytes;
  k.stackFrameBytes = r.stackFrameBytes;
  k.sharedBytes = r.sharedBytes;
}

} // namespace

bool nvrtcAvailable() { return true; }

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

cpu::Status compileWithNvrtc(const std::string &kernelName,
                             const std::string &source, const std::string &arch,
                             CompiledKernel &out,
                             const std::vector<std::string> &extra) {
  std::string where = "NVRTC, kernel " + kernelName + " for " + arch;
  if (!isSupportedArch(arch)) {
    std::string list;
    for (const std::string &a : supportedArchs())
      list += (list.empty() ? "" : ", ") + a;
    return cpu::Status::error(where + ": unknown arch; supported: " + list);
  }
  nvrtcProgram prog;
  std::string file = kernelName + ".cu";
  if (nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), file.c_str(), 0,
                                         nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return cpu::Status::error(where + ": " + nvrtcGetErrorString(r));
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "--std=c++17",
                                   "-I" FOLIO_CUDA_INCLUDE_DIR,
                                   "--ptxas-options=-v"};
  opts.insert(opts.end(), extra.begin(), extra.end());
  std::vector<const char *> argv;
  for (const std::string &o : opts)
    argv.push_back(o.c_str());
  nvrtcResult rc = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  out.log.assign(logSize, '\0');
  if (logSize)
    nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && out.log.back() == '\0')
    out.log.pop_back();
  out.name = kernelName;
  out.arch = arch;
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    return cpu::Status::error(where + " failed (" + nvrtcGetErrorString(rc) +
                              "):\n" + out.log);
  }
  size_t n = 0;
  nvrtcGetPTXSize(prog, &n);
  out.ptx.assign(n, '\0');
  nvrtcGetPTX(prog, out.ptx.data());
  if (!out.ptx.empty() && out.ptx.back() == '\0')
    out.ptx.pop_back();
  nvrtcGetCUBINSize(prog, &n);
  out.cubin.resize(n);
  nvrtcGetCUBIN(prog, out.cubin.data());
  nvrtcDestroyProgram(&prog);
  parseResources(out);
  return cpu::Status::success();
}

} // namespace folio::cuda
