//===- CudaDriver.cpp - The CUDA driver, loaded at run time ---------------===//

#include "runtime/Device/CudaDriver.h"
#include "runtime/Device/CudaApi.h"
#include "runtime/Device/DynamicLibrary.h"

#include <cstdlib>

namespace folio::device {

namespace {

// The probe's entry points: only what listing devices needs (CudaApi has
// the rest), so a driver too old to launch Folio's kernels still says
// which devices it has.
using CUresult = cu::Result;
using CUdevice = cu::Device;

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
  if (api.getErrorName && api.getErrorName(r, &name) == cu::kSuccess && name)
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
    return noCudaDriver(lib.status());
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
  if (cu::Result r = api.init(0); r != cu::kSuccess)
    return cudaInitFailed(info.library, r, errorText(api, r));
  if (api.driverGetVersion(&info.driverVersion) != cu::kSuccess)
    info.driverVersion = 0;
  int count = 0;
  if (cu::Result r = api.deviceGetCount(&count); r != cu::kSuccess)
    return cudaCountFailed(info.library, errorText(api, r));
  if (count <= 0)
    return noCudaDevice(info.library);
  for (int i = 0; i < count; ++i) {
    CudaDeviceInfo d;
    d.ordinal = i;
    CUdevice dev = 0;
    char name[256] = {0};
    CUresult r = api.deviceGet(&dev, i);
    if (r == cu::kSuccess)
      r = api.deviceGetAttribute(&d.major, cu::kAttrComputeCapabilityMajor,
                                 dev);
    if (r == cu::kSuccess)
      r = api.deviceGetAttribute(&d.minor, cu::kAttrComputeCapabilityMinor,
                                 dev);
    if (r == cu::kSuccess)
      r = api.deviceGetName(name, int(sizeof(name)) - 1, dev);
    if (r != cu::kSuccess)
      return Status::notFound("the CUDA driver " + info.library +
                              " cannot describe device " + std::to_string(i) +
                              " (" + errorText(api, r) + ")");
    d.name = name;
    info.devices.push_back(std::move(d));
  }
  return info;
}

} // namespace folio::device
