//===- CudaKernels.cpp - A plan's CUDA kernels, generated and embedded ----===//

#include "compiler/Plan/CudaKernels.h"

#include "runtime/Plan/PlanIO.h"

#include <algorithm>
#include <map>
#include <type_traits>
#include <variant>

namespace folio::compiler {

namespace {

/// The source of the kernel a launch runs.
cpu::Status emitFor(const cuda::AnyKernelSpec &spec, cuda::GeneratedKernel &g) {
  return std::visit(
      [&](const auto &s) -> cpu::Status {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, cuda::KVWriteSpec>) {
          return cuda::emitKVWrite(s, g);
        } else if constexpr (std::is_same_v<S, cuda::PagedDecodeSpec>) {
          cuda::GeneratedKernel combine;
          return cuda::emitPagedDecode(s, g, combine);
        } else if constexpr (std::is_same_v<S, cuda::PagedDecodeCombineSpec>) {
          cuda::GeneratedKernel main;
          return cuda::emitPagedDecode(s.decode, main, g);
        } else if constexpr (std::is_same_v<S, cuda::PagedPrefillSpec>) {
          return cuda::emitPagedPrefill(s, g);
        } else if constexpr (std::is_same_v<S, cuda::RowKernelSpec>) {
          return cuda::emitRowKernel(s, g);
        } else if constexpr (std::is_same_v<S, cuda::RotarySpec>) {
          return cuda::emitRotary(s, g);
        } else if constexpr (std::is_same_v<S, cuda::GatherSpec>) {
          return cuda::emitGather(s, g);
        } else if constexpr (std::is_same_v<S, cuda::SampleSpec>) {
          return cuda::emitSample(s, g);
        } else if constexpr (std::is_same_v<S, cuda::LinearSpec>) {
          return cuda::emitLinear(s, g);
        } else {
          return cuda::emitCast(s, g);
        }
      },
      spec);
}

} // namespace

Status collectAllCudaKernels(const plan::Plan &plan,
                             std::vector<PlannedCudaKernel> &kernels,
                             std::vector<std::string> &notGenerated) {
  device::PlanLaunches launches;
  if (Status s = device::planLaunches(plan, launches); !s)
    return s;
  for (const std::string &kind : launches.notGenerated)
    if (std::find(notGenerated.begin(), notGenerated.end(), kind) ==
        notGenerated.end())
      notGenerated.push_back(kind);
  std::map<std::string, size_t> byName;
  kernels.clear();
  auto add = [&](const device::PlanLaunch &l) -> Status {
    auto [it, inserted] = byName.emplace(l.name, kernels.size());
    if (inserted) {
      PlannedCudaKernel k;
      k.spec = l.spec;
      if (cpu::Status st = emitFor(l.spec, k.kernel); !st.ok())
        return Status::invalidArgument(
            (l.step >= 0 ? plan.steps[size_t(l.step)].kind + " at " +
                               plan.steps[size_t(l.step)].name
                         : std::string("sampling")) +
            ": " + st.message());
      if (k.kernel.name != l.name)
        return Status::internal("kernel " + l.name + " was emitted as " +
                                k.kernel.name);
      kernels.push_back(std::move(k));
    }
    std::vector<int32_t> &steps = kernels[it->second].steps;
    steps.insert(steps.end(), l.steps.begin(), l.steps.end());
    return Status::ok();
  };
  for (const device::KernelLaunches &k : launches.kernels)
    for (const device::PlanLaunch &l : k.launches)
      if (Status s = add(l); !s)
        return s;
  for (const device::PlanLaunch &l : launches.samplers)
    if (Status s = add(l); !s)
      return s;
  // A kernel's steps, increasing, each once (one step may run it more
  // than once: a gated MLP casts both its GEMMs' inputs).
  for (PlannedCudaKernel &k : kernels) {
    std::sort(k.steps.begin(), k.steps.end());
    k.steps.erase(std::unique(k.steps.begin(), k.steps.end()), k.steps.end());
  }
  return Status::ok();
}

Status embedCudaKernels(plan::Plan &plan, const std::string &arch,
                        const cuda::KernelCacheOptions &cache,
                        std::vector<EmbeddedCudaKernel> &embedded,
                        std::vector<std::string> &notGenerated) {
  if (!cuda::isSupportedArch(arch)) {
    std::string list;
    for (const std::string &a : cuda::supportedArchs())
      list += (list.empty() ? "" : ", ") + a;
    return Status::invalidArgument("--target=" + arch +
                                   " is not a GPU target; supported: " + list);
  }
  if (!cuda::nvrtcAvailable())
    return Status::invalidArgument(
        "--target=" + arch +
        " embeds CUDA kernels compiled by NVRTC in the plan, but this build "
        "has no CUDA toolkit (configure with FOLIO_ENABLE_CUDA=ON and the "
        "toolkit installed, or compile for --target=cpu)");
  std::vector<PlannedCudaKernel> kernels;
  if (Status s = collectAllCudaKernels(plan, kernels, notGenerated); !s)
    return s;
  for (const PlannedCudaKernel &pk : kernels) {
    if (pk.steps.empty())
      continue; // a sampler of a plan no step of which writes its output
    const cuda::GeneratedKernel &g = pk.kernel;
    cuda::CompiledKernel c;
    cuda::CacheOutcome outcome;
    cpu::Status st = cuda::compileKernelCached(g.name, g.key, g.source, arch,
                                               cache, c, &outcome);
    if (!st.ok())
      return Status::invalidArgument(st.message());
    plan::DeviceKernel dk;
    dk.name = g.name;
    dk.key = g.key;
    dk.arch = arch;
    dk.steps = pk.steps;
    dk.cubinBytes = c.cubin.size();
    dk.cubinOffset = plan.blob.append(c.cubin.data(), dk.cubinBytes);
    dk.cubinHash = plan::planHash(c.cubin.data(), dk.cubinBytes);
    std::string ptx = c.ptx + '\0';
    dk.ptxBytes = ptx.size();
    dk.ptxOffset = plan.blob.append(ptx.data(), dk.ptxBytes);
    dk.ptxHash = plan::planHash(ptx.data(), dk.ptxBytes);
    dk.registers = c.registers;
    dk.spillStoreBytes = c.spillStoreBytes;
    dk.spillLoadBytes = c.spillLoadBytes;
    dk.stackFrameBytes = c.stackFrameBytes;
    dk.sharedBytes = c.sharedBytes;
    plan.deviceKernels.push_back(std::move(dk));
    embedded.push_back({g.name, outcome});
  }
  return Status::ok();
}

} // namespace folio::compiler
