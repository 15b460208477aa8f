//===- KernelImages.cpp - A plan's kernel images for one GPU --------------===//

#include "runtime/Device/KernelImages.h"

#include "codegen/CUDA/KernelSpec.h"

#include <cstdlib>
#include <map>
#include <set>

namespace folio::device {

namespace {

/// "sm_86" -> 86, "sm_90a" -> 90 with `specific`; -1 if malformed.
int archLevel(const std::string &arch, bool &specific) {
  specific = !arch.empty() && arch.back() == 'a';
  std::string digits = arch.substr(0, arch.size() - (specific ? 1 : 0));
  if (digits.rfind("sm_", 0) != 0 || digits.size() < 5)
    return -1;
  char *end = nullptr;
  long v = std::strtol(digits.c_str() + 3, &end, 10);
  return *end ? -1 : int(v);
}

} // namespace

Expected<std::vector<KernelImage>> selectKernelImages(const plan::Plan &plan,
                                                      int major, int minor) {
  std::string device = "sm_" + std::to_string(major) + std::to_string(minor);
  int level = major * 10 + minor;
  // The folioc --target whose kernels run best there.
  std::string target = cuda::deviceTarget(major, minor).arch;
  std::string recompile = target.empty()
                              ? "; Folio's CUDA kernels need sm_80 or newer"
                              : "; compile it with folioc --target=" + target;
  if (plan.deviceKernels.empty())
    return Status::notFound(
        "the plan has no CUDA kernels (it was compiled for the CPU)" +
        recompile);
  std::set<std::string> archs;
  // Per kernel name: the best cubin and the best PTX, by arch level.
  struct Best {
    const plan::DeviceKernel *cubin = nullptr, *ptx = nullptr;
    int cubinLevel = -1, ptxLevel = -1;
  };
  std::map<std::string, Best> best;
  std::vector<std::string> order;
  for (const plan::DeviceKernel &k : plan.deviceKernels) {
    archs.insert(k.arch);
    auto [it, inserted] = best.emplace(k.name, Best{});
    if (inserted)
      order.push_back(k.name);
    bool specific = false;
    int l = archLevel(k.arch, specific);
    if (l < 0)
      continue;
    bool ptxRuns = specific ? l == level : l <= level;
    bool cubinRuns = ptxRuns && l / 10 == major;
    if (cubinRuns && l > it->second.cubinLevel)
      it->second.cubin = &k, it->second.cubinLevel = l;
    if (ptxRuns && l > it->second.ptxLevel)
      it->second.ptx = &k, it->second.ptxLevel = l;
  }
  std::vector<KernelImage> out;
  for (const std::string &name : order) {
    const Best &b = best[name];
    if (b.cubin) {
      out.push_back({b.cubin, KernelImage::Format::Cubin});
    } else if (b.ptx) {
      out.push_back({b.ptx, KernelImage::Format::Ptx});
    } else {
      std::string list;
      for (const std::string &a : archs)
        list += (list.empty() ? "" : ", ") + a;
      return Status::notFound("the plan's CUDA kernel " + name +
                              " has no cubin or PTX that runs on " + device +
                              " (the plan holds " + list + ")" + recompile);
    }
  }
  return out;
}

std::string describeKernels(const plan::Plan &plan) {
  std::map<std::string, size_t> kinds;
  for (const plan::Kernel &k : plan.kernels)
    ++kinds[k.kind];
  std::string out = "kernels: " + std::to_string(plan.kernels.size());
  std::string sep = " (";
  for (const auto &[kind, n] : kinds) {
    out += sep + kind + " " + std::to_string(n);
    sep = ", ";
  }
  out += kinds.empty() ? "\n" : ")\n";
  if (plan.deviceKernels.empty())
    return out + "device kernels: none (compiled for the CPU; folioc "
                 "--target=sm_80|sm_86|sm_89|sm_90a embeds CUDA kernels)\n";
  out += "device kernels: " + std::to_string(plan.deviceKernels.size()) + "\n";
  auto figure = [](int32_t v, const char *unit) {
    return v < 0 ? std::string("?") : std::to_string(v) + unit;
  };
  for (const plan::DeviceKernel &k : plan.deviceKernels) {
    out +=
        "  " + k.name + " " + k.arch + ": " + std::to_string(k.steps.size()) +
        (k.steps.size() == 1 ? " step" : " steps") + ", cubin " +
        std::to_string(k.cubinBytes) + " B, ptx " + std::to_string(k.ptxBytes) +
        " B, registers " + figure(k.registers, "") + ", spill stores " +
        figure(k.spillStoreBytes, " B") + ", spill loads " +
        figure(k.spillLoadBytes, " B") + ", stack " +
        figure(k.stackFrameBytes, " B") + ", static smem " +
        figure(k.sharedBytes, " B") + "\n";
  }
  return out;
}

} // namespace folio::device
