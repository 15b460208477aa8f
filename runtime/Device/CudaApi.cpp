//===- CudaApi.cpp - The CUDA driver API, resolved at run time ------------===//

#include "runtime/Device/CudaApi.h"
#include "runtime/Device/CudaDriver.h"
#include "runtime/Device/DynamicLibrary.h"

#include <map>
#include <memory>
#include <mutex>

namespace folio::device {

Expected<const CudaApi *> loadCudaApi() {
  // Never destroyed, like the libraries they point into: a device held in
  // a static (a tool's, a test's) is released after static destructors
  // would have run.
  static std::mutex *mu = new std::mutex;
  static auto *loadedApis = new std::map<std::string, std::unique_ptr<CudaApi>>;
  std::lock_guard<std::mutex> lock(*mu);
  auto &loaded = *loadedApis;
  std::string library = cudaDriverLibrary();
  if (auto it = loaded.find(library); it != loaded.end())
    return static_cast<const CudaApi *>(it->second.get());
  Expected<void *> lib = openLibrary(library);
  if (!lib)
    return noCudaDriver(lib.status());
  auto api = std::make_unique<CudaApi>();
  api->library = library;
  EntryPoints entries(*lib);
  auto resolve = [&](auto &fn, const char *name) { entries.resolve(fn, name); };
  resolve(api->init, "cuInit");
  resolve(api->driverGetVersion, "cuDriverGetVersion");
  resolve(api->deviceGetCount, "cuDeviceGetCount");
  resolve(api->deviceGet, "cuDeviceGet");
  resolve(api->deviceGetAttribute, "cuDeviceGetAttribute");
  resolve(api->deviceGetName, "cuDeviceGetName");
  resolve(api->deviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(api->primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(api->primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(api->ctxSetCurrent, "cuCtxSetCurrent");
  resolve(api->memAlloc, "cuMemAlloc_v2");
  resolve(api->memFree, "cuMemFree_v2");
  resolve(api->streamCreate, "cuStreamCreate");
  resolve(api->streamDestroy, "cuStreamDestroy_v2");
  resolve(api->streamSynchronize, "cuStreamSynchronize");
  resolve(api->memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  resolve(api->memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(api->memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  resolve(api->memsetD8Async, "cuMemsetD8Async");
  resolve(api->streamBeginCapture, "cuStreamBeginCapture_v2");
  resolve(api->streamEndCapture, "cuStreamEndCapture");
  resolve(api->graphInstantiate, "cuGraphInstantiateWithFlags");
  resolve(api->graphLaunch, "cuGraphLaunch");
  resolve(api->graphExecDestroy, "cuGraphExecDestroy");
  resolve(api->graphDestroy, "cuGraphDestroy");
  resolve(api->moduleLoadDataEx, "cuModuleLoadDataEx");
  resolve(api->moduleUnload, "cuModuleUnload");
  resolve(api->moduleGetFunction, "cuModuleGetFunction");
  resolve(api->funcSetAttribute, "cuFuncSetAttribute");
  resolve(api->launchKernel, "cuLaunchKernel");
  resolve(api->eventCreate, "cuEventCreate");
  resolve(api->eventRecord, "cuEventRecord");
  resolve(api->eventSynchronize, "cuEventSynchronize");
  // _v2 (CUDA 12.8 and newer) reports the same milliseconds; older
  // drivers have only the first version.
  entries.optional(api->eventElapsedTime, "cuEventElapsedTime_v2");
  if (!api->eventElapsedTime)
    resolve(api->eventElapsedTime, "cuEventElapsedTime");
  resolve(api->eventDestroy, "cuEventDestroy_v2");
  if (!entries.missing().empty())
    return Status::notFound("the CUDA driver " + library +
                            " lacks the entry points " + entries.missing() +
                            " (not a CUDA driver library, or too old)");
  entries.optional(api->getErrorName, "cuGetErrorName");
  entries.optional(api->getErrorString, "cuGetErrorString");
  const CudaApi *out = api.get();
  loaded.emplace(library, std::move(api));
  return out;
}

Status noCudaDriver(const Status &loadError) {
  return Status::notFound("no CUDA driver: " + loadError.message() +
                          "; the NVIDIA driver is not installed or not on "
                          "the loader path");
}

Status cudaInitFailed(const std::string &library, cu::Result r,
                      const std::string &errorText) {
  return Status::notFound(
      r == cu::kErrorNoDevice
          ? "no CUDA device: the driver " + library +
                " found none (cuInit: " + errorText + ")"
          : "the CUDA driver " + library +
                " failed to initialize (cuInit: " + errorText + ")");
}

Status cudaCountFailed(const std::string &library,
                       const std::string &errorText) {
  return Status::notFound(
      "the CUDA driver " + library +
      " cannot count its devices (cuDeviceGetCount: " + errorText + ")");
}

Status noCudaDevice(const std::string &library) {
  return Status::notFound("no CUDA device: the driver " + library +
                          " reports none");
}

std::string cudaErrorText(const CudaApi &api, cu::Result r) {
  const char *name = nullptr, *text = nullptr;
  std::string s;
  if (api.getErrorName && api.getErrorName(r, &name) == cu::kSuccess && name)
    s = std::string(name) + " (" + std::to_string(r) + ")";
  else
    s = "CUDA error " + std::to_string(r);
  if (api.getErrorString && api.getErrorString(r, &text) == cu::kSuccess &&
      text)
    s += ": " + std::string(text);
  return s;
}

} // namespace folio::device
