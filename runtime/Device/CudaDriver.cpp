//===- CudaDriver.cpp - The CUDA driver, loaded at run time ---------------===//

#include "runtime/Device/CudaDriver.h"
#include "runtime/Device/DynamicLibrary.h"

#include <cstdlib>

namespace folio::device {

namespace {

// The few driver API types and values used here (cuda.h is not included:
// the runtime builds without the toolkit).
using CUresult = int;
using CUdevice = int;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoDevice = 100;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

struct Api {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driverGetVersion)(int *) = nullptr;
  CUresult (*deviceGetCount)(int *) = nullptr;
  CUresult (*deviceGet)(CUdevice *, int) = nullptr;
  CUresult (*deviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*deviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*getErrorName)(CUresult, const char **) = nullptr; // optional
};

std::string errorText(const Api &api, CUresult r) {
  const char *name = nullptr;
  if (api.getErrorName && api.getErrorName(r, &name) == kCudaSuccess && name)
    return std::string(name) + " (" + std::to_string(r) + ")";
  return "CUDA error " + std::to_string(r);
}

} // namespace

std::string cudaDriverLibrary() {
  if (const char *p = std::getenv("FOLIO_LIBCUDA_PATH"); p && *p)
    return p;
  return "libcuda.so.1";
}

Expected<CudaDriverInfo> probeCudaDriver() {
  CudaDriverInfo info;
  info.library = cudaDriverLibrary();
  // Never closed: the driver keeps process-wide state, and CudaDevice
  // resolves its entry points from the same handle.
  Expected<void *> lib = openLibrary(info.library);
  if (!lib)
    return Status::notFound("no CUDA driver: " + lib.status().message() +
                            "; the NVIDIA driver is not installed or not on "
                            "the loader path");
  Api api;
  EntryPoints entries(*lib);
  auto resolve = [&](auto &fn, const char *name) { entries.resolve(fn, name); };
  resolve(api.init, "cuInit");
  resolve(api.driverGetVersion, "cuDriverGetVersion");
  resolve(api.deviceGetCount, "cuDeviceGetCount");
  resolve(api.deviceGet, "cuDeviceGet");
  resolve(api.deviceGetAttribute, "cuDeviceGetAttribute");
  resolve(api.deviceGetName, "cuDeviceGetName");
  if (!entries.missing().empty())
    return Status::notFound("the CUDA driver " + info.library +
                            " lacks the entry points " + entries.missing() +
                            " (not a CUDA driver library, or too old)");
  entries.optional(api.getErrorName, "cuGetErrorName");
  if (CUresult r = api.init(0); r != kCudaSuccess)
    return Status::notFound(
        r == kCudaErrorNoDevice
            ? "no CUDA device: the driver " + info.library +
                  " found none (cuInit: " + errorText(api, r) + ")"
            : "the CUDA driver " + info.library +
                  " failed to initialize (cuInit: " + errorText(api, r) + ")");
  if (api.driverGetVersion(&info.driverVersion) != kCudaSuccess)
    info.driverVersion = 0;
  int count = 0;
  if (CUresult r = api.deviceGetCount(&count); r != kCudaSuccess)
    return Status::notFound("the CUDA driver " + info.library +
                            " cannot count its devices (cuDeviceGetCount: " +
                            errorText(api, r) + ")");
  if (count <= 0)
    return Status::notFound("no CUDA device: the driver " + info.library +
                            " reports none");
  for (int i = 0; i < count; ++i) {
    CudaDeviceInfo d;
    d.ordinal = i;
    CUdevice dev = 0;
    char name[256] = {0};
    CUresult r = api.deviceGet(&dev, i);
    if (r == kCudaSuccess)
      r = api.deviceGetAttribute(&d.major, kAttrComputeCapabilityMajor, dev);
    if (r == kCudaSuccess)
      r = api.deviceGetAttribute(&d.minor, kAttrComputeCapabilityMinor, dev);
    if (r == kCudaSuccess)
      r = api.deviceGetName(name, int(sizeof(name)) - 1, dev);
    if (r != kCudaSuccess)
      return Status::notFound("the CUDA driver " + info.library +
                              " cannot describe device " + std::to_string(i) +
                              " (" + errorText(api, r) + ")");
    d.name = name;
    info.devices.push_back(std::move(d));
  }
  return info;
}

} // namespace folio::device
