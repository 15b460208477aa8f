//===- GpuBench.cpp - Loading kernels, timing, the copy -------------------===//

#include "tools/folio-gpu-bench/GpuBench.h"
#include "tools/folio-gpu-bench/Support.h"

#include "codegen/CUDA/NVRTC/Nvrtc.h"

#include <algorithm>
#include <cmath>

namespace folio::gpubench {

using device::CudaDevice;
using device::DeviceBuffer;

namespace detail {

Expected<const device::CudaKernel *> find(const LoadedKernels &k,
                                          const std::string &name) {
  auto it = k.byName.find(name);
  if (it == k.byName.end())
    return Status::notFound("kernel " + name + " was not loaded");
  return &it->second;
}

Expected<Timing> timeRuns(const CudaDevice &dev, int runs, double bytes,
                          const std::function<Status()> &body) {
  for (int i = 0; i < 2; ++i)
    if (Status s = body(); !s)
      return s;
  Expected<double> once = dev.time(body);
  if (!once)
    return once.status();
  const int reps =
      *once >= 1.0
          ? 1
          : int(std::min(1000.0, std::ceil(1.0 / std::max(*once, 1e-3))));
  std::vector<double> ms;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    Expected<double> t = dev.time([&]() -> Status {
      for (int r = 0; r < reps; ++r)
        if (Status s = body(); !s)
          return s;
      return Status::ok();
    });
    if (!t)
      return t.status();
    ms.push_back(*t / reps);
  }
  std::sort(ms.begin(), ms.end());
  Timing out;
  out.ms = ms[ms.size() / 2];
  out.bytes = bytes;
  out.runs = int(ms.size());
  out.gbPerS = out.ms > 0 ? bytes / (out.ms * 1e6) : 0;
  return out;
}

} // namespace detail

device::CudaLaunch toLaunch(const cuda::LaunchGeometry &g) {
  device::CudaLaunch l;
  std::copy(g.grid, g.grid + 3, l.grid);
  std::copy(g.block, g.block + 3, l.block);
  l.dynamicShared = g.dynamicShared;
  return l;
}

Status loadKernels(const CudaDevice &dev,
                   const std::vector<cuda::GeneratedKernel> &kernels,
                   LoadedKernels &out) {
  cuda::DeviceTarget target = cuda::deviceTarget(dev.major(), dev.minor());
  if (target.arch.empty())
    return Status::invalidArgument(dev.name() + " is " + dev.arch() +
                                   "; the generated kernels need sm_80 or "
                                   "newer");
  std::string source;
  for (const cuda::GeneratedKernel &k : kernels)
    source += k.source;
  cuda::CompiledKernel c;
  if (cpu::Status st =
          cuda::compileWithNvrtc("folio_gpu_bench", source, target.arch, c);
      !st.ok())
    return Status::internal(st.message());
  std::string ptx = c.ptx + '\0';
  const void *image = target.cubinRuns
                          ? static_cast<const void *>(c.cubin.data())
                          : static_cast<const void *>(ptx.data());
  Expected<device::CudaModule> m =
      dev.loadModule(image, std::to_string(kernels.size()) +
                                " generated kernels for " + target.arch);
  if (!m)
    return m.status();
  out.module = std::move(*m);
  out.arch = target.arch;
  out.fromPtx = !target.cubinRuns;
  for (const cuda::GeneratedKernel &k : kernels) {
    Expected<device::CudaKernel> f = dev.kernel(out.module, k.name);
    if (!f)
      return f.status();
    out.byName[k.name] = *f;
  }
  return Status::ok();
}

Expected<Timing> measureCopy(const CudaDevice &dev, size_t bytes, int runs) {
  Expected<DeviceBuffer> a = dev.allocate(bytes, "the copy's source");
  if (!a)
    return a.status();
  Expected<DeviceBuffer> b = dev.allocate(bytes, "the copy's destination");
  if (!b)
    return b.status();
  if (Status s = dev.fill(*a, 1); !s)
    return s;
  return detail::timeRuns(dev, runs, 2.0 * double(bytes),
                          [&] { return dev.copyOnDevice(*b, *a, bytes); });
}

} // namespace folio::gpubench
