//===- CudaApi.h - The CUDA driver API, resolved at run time ----*- C++ -*-===//
//
// The entry points the runtime calls, taken with dlsym from the driver
// library (cudaDriverLibrary(): libcuda.so.1, or FOLIO_LIBCUDA_PATH in
// tests), under the versioned names cuda.h maps its API to
// (cuMemAlloc -> cuMemAlloc_v2, ...). cuda.h itself is not included: the
// runtime builds without the toolkit, and the handful of types and
// constants needed are restated here with their cuda.h values.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_CUDAAPI_H
#define FOLIO_RUNTIME_DEVICE_CUDAAPI_H

#include "runtime/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace folio::device {

namespace cu {
using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Context = struct CtxSt *;
using Module = struct ModSt *;
using Function = struct FuncSt *;
using Stream = struct StreamSt *;
using Event = struct EventSt *;
using Graph = struct GraphSt *;
using GraphExec = struct GraphExecSt *;

constexpr Result kSuccess = 0;
constexpr Result kErrorOutOfMemory = 2;
constexpr Result kErrorNoDevice = 100;
constexpr Result kErrorNotFound = 500;
constexpr Result kErrorStreamCaptureUnsupported = 900;
constexpr unsigned kStreamNonBlocking = 1;
constexpr int kStreamCaptureModeThreadLocal = 1;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kFuncAttrMaxDynamicShared = 8;
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSize = 6;
} // namespace cu

/// The driver's entry points; every one is resolved, or loading fails.
struct CudaApi {
  std::string library;
  cu::Result (*init)(unsigned) = nullptr;
  cu::Result (*driverGetVersion)(int *) = nullptr;
  cu::Result (*deviceGetCount)(int *) = nullptr;
  cu::Result (*deviceGet)(cu::Device *, int) = nullptr;
  cu::Result (*deviceGetAttribute)(int *, int, cu::Device) = nullptr;
  cu::Result (*deviceGetName)(char *, int, cu::Device) = nullptr;
  cu::Result (*deviceTotalMem)(size_t *, cu::Device) = nullptr;
  cu::Result (*primaryCtxRetain)(cu::Context *, cu::Device) = nullptr;
  cu::Result (*primaryCtxRelease)(cu::Device) = nullptr;
  cu::Result (*ctxSetCurrent)(cu::Context) = nullptr;
  cu::Result (*memAlloc)(cu::DevicePtr *, size_t) = nullptr;
  cu::Result (*memFree)(cu::DevicePtr) = nullptr;
  // Streams: every operation of a CudaDevice is ordered on its one stream,
  // which stream capture (CUDA graphs) needs (the legacy default stream
  // cannot be captured).
  cu::Result (*streamCreate)(cu::Stream *, unsigned) = nullptr;
  cu::Result (*streamDestroy)(cu::Stream) = nullptr;
  cu::Result (*streamSynchronize)(cu::Stream) = nullptr;
  cu::Result (*memcpyHtoDAsync)(cu::DevicePtr, const void *, size_t,
                                cu::Stream) = nullptr;
  cu::Result (*memcpyDtoHAsync)(void *, cu::DevicePtr, size_t,
                                cu::Stream) = nullptr;
  cu::Result (*memcpyDtoDAsync)(cu::DevicePtr, cu::DevicePtr, size_t,
                                cu::Stream) = nullptr;
  cu::Result (*memsetD8Async)(cu::DevicePtr, unsigned char, size_t,
                              cu::Stream) = nullptr;
  // CUDA graphs: a stream's launches captured once, replayed with one call.
  cu::Result (*streamBeginCapture)(cu::Stream, int) = nullptr;
  cu::Result (*streamEndCapture)(cu::Stream, cu::Graph *) = nullptr;
  cu::Result (*graphInstantiate)(cu::GraphExec *, cu::Graph,
                                 unsigned long long) = nullptr;
  cu::Result (*graphLaunch)(cu::GraphExec, cu::Stream) = nullptr;
  cu::Result (*graphExecDestroy)(cu::GraphExec) = nullptr;
  cu::Result (*graphDestroy)(cu::Graph) = nullptr;
  cu::Result (*moduleLoadDataEx)(cu::Module *, const void *, unsigned, int *,
                                 void **) = nullptr;
  cu::Result (*moduleUnload)(cu::Module) = nullptr;
  cu::Result (*moduleGetFunction)(cu::Function *, cu::Module,
                                  const char *) = nullptr;
  cu::Result (*funcSetAttribute)(cu::Function, int, int) = nullptr;
  cu::Result (*launchKernel)(cu::Function, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, cu::Stream,
                             void **, void **) = nullptr;
  cu::Result (*eventCreate)(cu::Event *, unsigned) = nullptr;
  cu::Result (*eventRecord)(cu::Event, cu::Stream) = nullptr;
  cu::Result (*eventSynchronize)(cu::Event) = nullptr;
  cu::Result (*eventElapsedTime)(float *, cu::Event, cu::Event) = nullptr;
  cu::Result (*eventDestroy)(cu::Event) = nullptr;
  // Optional: names in messages.
  cu::Result (*getErrorName)(cu::Result, const char **) = nullptr;
  cu::Result (*getErrorString)(cu::Result, const char **) = nullptr;
};

/// Loads cudaDriverLibrary() and resolves every entry point above; an
/// error names the library and what is missing. The library stays loaded
/// for the process's lifetime, and each library is resolved once.
Expected<const CudaApi *> loadCudaApi();

/// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", or the number alone when
/// the driver cannot name it.
std::string cudaErrorText(const CudaApi &api, cu::Result r);

/// The errors the probe (CudaDriver.h) and CudaDevice::open share, each
/// naming the library: it cannot be loaded (`loadError` says why), cuInit
/// failed (no device, or another reason), the devices cannot be counted,
/// there are none.
Status noCudaDriver(const Status &loadError);
Status cudaInitFailed(const std::string &library, cu::Result r,
                      const std::string &errorText);
Status cudaCountFailed(const std::string &library,
                       const std::string &errorText);
Status noCudaDevice(const std::string &library);

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_CUDAAPI_H
