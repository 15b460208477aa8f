//===- Support.h - What the GPU measurements share ---------------*- C++
//-*-===//

#ifndef FOLIO_TOOLS_FOLIO_GPU_BENCH_SUPPORT_H
#define FOLIO_TOOLS_FOLIO_GPU_BENCH_SUPPORT_H

#include "tools/folio-gpu-bench/GpuBench.h"

#include "codegen/CUDA/KernelSpec.h"

#include <functional>
#include <string>
#include <vector>

namespace folio::gpubench::detail {

/// The loaded kernel `name`, or an error naming it.
Expected<const device::CudaKernel *> find(const LoadedKernels &k,
                                          const std::string &name);

/// Two warm-up runs, then `runs` timings of enough back-to-back runs to
/// take about a millisecond (event resolution and launch gaps stay small
/// beside it); the median per run.
Expected<Timing> timeRuns(const device::CudaDevice &dev, int runs, double bytes,
                          const std::function<Status()> &body);

template <typename T>
Expected<device::DeviceBuffer> upload(const device::CudaDevice &dev,
                                      const std::vector<T> &v,
                                      const std::string &what) {
  return dev.upload(v.data(), v.size() * sizeof(T), what);
}

/// Runs `body` once, waits for it, and reads `count` elements of `result`
/// back: the output the checks compare before anything is timed.
template <typename T>
Expected<std::vector<T>>
runAndRead(const device::CudaDevice &dev, const std::function<Status()> &body,
           const device::DeviceBuffer &result, size_t count) {
  if (Status s = body(); !s)
    return s;
  if (Status s = dev.synchronize(); !s)
    return s;
  std::vector<T> out(count);
  if (Status s = dev.copyToHost(out.data(), result, 0, count * sizeof(T)); !s)
    return s;
  return out;
}

} // namespace folio::gpubench::detail

#endif // FOLIO_TOOLS_FOLIO_GPU_BENCH_SUPPORT_H
