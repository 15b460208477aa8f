//===- NvrtcOn.cpp - NVRTC from the CUDA toolkit --------------------------===//

#include "codegen/CUDA/NVRTC/Nvrtc.h"

#include "codegen/CUDA/KernelSpec.h"

#include <nvrtc.h>

#include <cstdlib>
#include <regex>

namespace folio::cuda {

namespace {

int captureInt(const std::string &log, const std::regex &re) {
  std::smatch m;
  return std::regex_search(log, m, re) ? std::atoi(m[1].str().c_str()) : -1;
}

/// ptxas -v lines for the kernel's entry, e.g. "Used 40 registers, used 1
/// barriers, 2048 bytes smem" and "0 bytes stack frame, 0 bytes spill
/// stores, 0 bytes spill loads".
void parseResources(CompiledKernel &k) {
  k.registers = captureInt(k.log, std::regex(R"(Used (\d+) registers)"));
  k.sharedBytes = captureInt(k.log, std::regex(R"((\d+) bytes smem)"));
  if (k.registers >= 0 && k.sharedBytes < 0)
    k.sharedBytes = 0; // ptxas omits smem when there is none
  k.stackFrameBytes =
      captureInt(k.log, std::regex(R"((\d+) bytes stack frame)"));
  k.spillStoreBytes =
      captureInt(k.log, std::regex(R"((\d+) bytes spill stores)"));
  k.spillLoadBytes =
      captureInt(k.log, std::regex(R"((\d+) bytes spill loads)"));
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
