//===- CudaDevice.cpp - One GPU through the driver API --------------------===//

#include "runtime/Device/CudaDevice.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

namespace folio::device {

namespace {
/// The context this thread made current last (through makeCurrent): a
/// launch per kernel need not ask the driver again.
thread_local cu::Context currentContext = nullptr;
} // namespace

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  if (this != &o) {
    this->~DeviceBuffer();
    device_ = o.device_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.device_ = nullptr;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (device_ && ptr_ && device_->makeCurrent())
    device_->api_->memFree(ptr_);
  device_ = nullptr;
  ptr_ = 0;
}

CudaModule &CudaModule::operator=(CudaModule &&o) noexcept {
  if (this != &o) {
    this->~CudaModule();
    device_ = o.device_;
    module_ = o.module_;
    what_ = std::move(o.what_);
    o.device_ = nullptr;
    o.module_ = nullptr;
  }
  return *this;
}

CudaModule::~CudaModule() {
  if (device_ && module_ && device_->makeCurrent())
    device_->api_->moduleUnload(module_);
  device_ = nullptr;
  module_ = nullptr;
}

CudaGraph &CudaGraph::operator=(CudaGraph &&o) noexcept {
  if (this != &o) {
    this->~CudaGraph();
    device_ = o.device_;
    graph_ = o.graph_;
    exec_ = o.exec_;
    o.device_ = nullptr;
    o.graph_ = nullptr;
    o.exec_ = nullptr;
  }
  return *this;
}

CudaGraph::~CudaGraph() {
  if (device_ && device_->makeCurrent()) {
    if (exec_)
      device_->api_->graphExecDestroy(exec_);
    if (graph_)
      device_->api_->graphDestroy(graph_);
  }
  device_ = nullptr;
  graph_ = nullptr;
  exec_ = nullptr;
}

Status CudaDevice::check(cu::Result r, const std::string &call,
                         const std::string &what) const {
  if (r == cu::kSuccess)
    return Status::ok();
  std::string msg = "CUDA device " + std::to_string(device_) + " (" + name_ +
                    "): " + call + " for " + what +
                    " failed: " + cudaErrorText(*api_, r);
  return r == cu::kErrorOutOfMemory ? Status::resourceExhausted(msg)
                                    : Status::internal(msg);
}

Expected<std::unique_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  Expected<const CudaApi *> api = loadCudaApi();
  if (!api)
    return api.status();
  const CudaApi &a = **api;
  if (cu::Result r = a.init(0); r != cu::kSuccess)
    return cudaInitFailed(a.library, r, cudaErrorText(a, r));
  int count = 0;
  if (cu::Result r = a.deviceGetCount(&count); r != cu::kSuccess)
    return cudaCountFailed(a.library, cudaErrorText(a, r));
  if (count <= 0)
    return noCudaDevice(a.library);
  if (ordinal < 0 || ordinal >= count)
    return Status::invalidArgument("CUDA device " + std::to_string(ordinal) +
                                   " does not exist; the driver reports " +
                                   std::to_string(count) + " (0 to " +
                                   std::to_string(count - 1) + ")");
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  d->api_ = *api;
  char name[256] = {0};
  int optin = 0;
  cu::Device &dev = d->device_;
  // Each query in turn; the first that fails is named.
  const std::pair<const char *, std::function<cu::Result()>> queries[] = {
      {"cuDeviceGet", [&] { return a.deviceGet(&dev, ordinal); }},
      {"cuDeviceGetName",
       [&] { return a.deviceGetName(name, int(sizeof(name)) - 1, dev); }},
      {"cuDeviceGetAttribute (compute capability)",
       [&] {
         cu::Result r = a.deviceGetAttribute(
             &d->major_, cu::kAttrComputeCapabilityMajor, dev);
         return r != cu::kSuccess
                    ? r
                    : a.deviceGetAttribute(
                          &d->minor_, cu::kAttrComputeCapabilityMinor, dev);
       }},
      {"cuDeviceGetAttribute (multiprocessors)",
       [&] {
         return a.deviceGetAttribute(&d->multiprocessors_,
                                     cu::kAttrMultiprocessorCount, dev);
       }},
      {"cuDeviceGetAttribute (opt-in shared memory)",
       [&] {
         return a.deviceGetAttribute(&optin, cu::kAttrMaxSharedPerBlockOptin,
                                     dev);
       }},
      {"cuDeviceTotalMem",
       [&] { return a.deviceTotalMem(&d->totalMemory_, dev); }},
      {"cuDevicePrimaryCtxRetain",
       [&] { return a.primaryCtxRetain(&d->context_, dev); }},
  };
  for (const auto &[call, query] : queries)
    if (cu::Result r = query(); r != cu::kSuccess)
      return Status::notFound("CUDA device " + std::to_string(ordinal) + ": " +
                              call + " failed: " + cudaErrorText(a, r));
  d->name_ = name;
  d->maxDynamicShared_ = size_t(optin > 0 ? optin : 48 * 1024);
  if (a.driverGetVersion(&d->driverVersion_) != cu::kSuccess)
    d->driverVersion_ = 0;
  if (Status s = d->makeCurrent(); !s)
    return s;
  if (Status s = d->check(a.streamCreate(&d->stream_, cu::kStreamNonBlocking),
                          "cuStreamCreate", "the device's stream");
      !s)
    return s;
  return d;
}

CudaDevice::~CudaDevice() {
  if (stream_ && makeCurrent())
    api_->streamDestroy(stream_);
  if (currentContext == context_)
    currentContext = nullptr; // a later retain may return the same handle
  if (context_)
    api_->primaryCtxRelease(device_);
}

std::string CudaDevice::arch() const {
  return "sm_" + std::to_string(major_) + std::to_string(minor_);
}

Status CudaDevice::makeCurrent() const {
  if (currentContext == context_)
    return Status::ok();
  if (Status s = check(api_->ctxSetCurrent(context_), "cuCtxSetCurrent",
                       "its primary context");
      !s)
    return s;
  currentContext = context_;
  return Status::ok();
}

Expected<DeviceBuffer> CudaDevice::allocate(size_t bytes,
                                            const std::string &what) const {
  if (Status s = makeCurrent(); !s)
    return s;
  DeviceBuffer b;
  if (bytes == 0) // cuMemAlloc refuses 0 bytes; a null buffer is valid
    return b;
  if (Status s =
          check(api_->memAlloc(&b.ptr_, bytes),
                "cuMemAlloc of " + std::to_string(bytes) + " bytes", what);
      !s)
    return s;
  b.device_ = this;
  b.bytes_ = bytes;
  return b;
}

namespace {

Status outOfRange(const char *call, size_t offset, size_t bytes, size_t size) {
  return Status::invalidArgument(
      std::string(call) + ": bytes [" + std::to_string(offset) + ", " +
      std::to_string(offset + bytes) + ") outside a buffer of " +
      std::to_string(size));
}

} // namespace

Status CudaDevice::notWhileCapturing(const char *call) const {
  if (!capturing_)
    return Status::ok();
  return Status::internal("CUDA device " + std::to_string(device_) + " (" +
                          name_ + "): " + call +
                          " while capturing a CUDA graph (only launches are "
                          "part of a graph)");
}

Status CudaDevice::copyToDevice(const DeviceBuffer &dst, size_t offset,
                                const void *src, size_t bytes) const {
  if (offset > dst.bytes() || bytes > dst.bytes() - offset)
    return outOfRange("copyToDevice", offset, bytes, dst.bytes());
  if (bytes == 0)
    return Status::ok();
  if (Status s = notWhileCapturing("copyToDevice"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  // From pageable memory the driver stages the bytes before returning: the
  // caller may reuse `src` at once.
  return check(api_->memcpyHtoDAsync(dst.ptr() + offset, src, bytes, stream_),
               "cuMemcpyHtoDAsync", std::to_string(bytes) + " bytes");
}

Status CudaDevice::copyToHost(void *dst, const DeviceBuffer &src, size_t offset,
                              size_t bytes) const {
  if (offset > src.bytes() || bytes > src.bytes() - offset)
    return outOfRange("copyToHost", offset, bytes, src.bytes());
  return copyToHostFrom(dst, src.ptr() + offset, bytes);
}

Status CudaDevice::copyToHostFrom(void *dst, cu::DevicePtr src,
                                  size_t bytes) const {
  if (bytes == 0)
    return Status::ok();
  if (Status s = notWhileCapturing("copyToHost"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  if (Status s = check(api_->memcpyDtoHAsync(dst, src, bytes, stream_),
                       "cuMemcpyDtoHAsync", std::to_string(bytes) + " bytes");
      !s)
    return s;
  return check(api_->streamSynchronize(stream_), "cuStreamSynchronize",
               "a copy to the host");
}

Status CudaDevice::copyOnDevice(const DeviceBuffer &dst,
                                const DeviceBuffer &src, size_t bytes) const {
  if (bytes > dst.bytes() || bytes > src.bytes())
    return outOfRange("copyOnDevice", 0, bytes,
                      std::min(dst.bytes(), src.bytes()));
  if (bytes == 0)
    return Status::ok();
  if (Status s = notWhileCapturing("copyOnDevice"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  return check(api_->memcpyDtoDAsync(dst.ptr(), src.ptr(), bytes, stream_),
               "cuMemcpyDtoDAsync", std::to_string(bytes) + " bytes");
}

Status CudaDevice::fill(const DeviceBuffer &dst, unsigned char byte) const {
  if (dst.bytes() == 0)
    return Status::ok();
  if (Status s = notWhileCapturing("fill"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  return check(api_->memsetD8Async(dst.ptr(), byte, dst.bytes(), stream_),
               "cuMemsetD8Async", std::to_string(dst.bytes()) + " bytes");
}

Expected<DeviceBuffer> CudaDevice::upload(const void *src, size_t bytes,
                                          const std::string &what) const {
  Expected<DeviceBuffer> b = allocate(bytes, what);
  if (!b)
    return b;
  if (Status s = copyToDevice(*b, 0, src, bytes); !s)
    return s;
  return b;
}

Expected<CudaModule> CudaDevice::loadModule(const void *image,
                                            const std::string &what) const {
  if (Status s = makeCurrent(); !s)
    return s;
  std::vector<char> log(8192, '\0');
  int options[2] = {cu::kJitErrorLogBuffer, cu::kJitErrorLogBufferSize};
  void *values[2] = {log.data(),
                     reinterpret_cast<void *>(uintptr_t(log.size() - 1))};
  CudaModule m;
  cu::Result r = api_->moduleLoadDataEx(&m.module_, image, 2, options, values);
  if (r != cu::kSuccess) {
    std::string jit(log.data());
    Status s = check(r, "cuModuleLoadDataEx", what);
    return Status::internal(s.message() +
                            (jit.empty() ? "" : "; JIT log:\n" + jit));
  }
  m.device_ = this;
  m.what_ = what;
  return m;
}

Expected<CudaKernel> CudaDevice::kernel(const CudaModule &module,
                                        const std::string &name) const {
  if (Status s = makeCurrent(); !s)
    return s;
  CudaKernel k;
  k.name = name;
  cu::Result r =
      api_->moduleGetFunction(&k.function, module.module_, name.c_str());
  if (r == cu::kErrorNotFound)
    return Status::notFound("CUDA module " + module.what_ +
                            " has no kernel named " + name);
  if (Status s = check(r, "cuModuleGetFunction", name); !s)
    return s;
  return k;
}

Status CudaDevice::launch(const CudaKernel &kernel, const CudaLaunch &l,
                          const void *args) const {
  for (unsigned d : l.grid)
    if (d == 0)
      return Status::ok(); // an empty grid: nothing to run
  if (Status s = makeCurrent(); !s)
    return s;
  if (l.dynamicShared > maxDynamicShared_)
    return Status::invalidArgument(
        "kernel " + kernel.name + " asks for " +
        std::to_string(l.dynamicShared) +
        " bytes of dynamic shared memory; this device allows " +
        std::to_string(maxDynamicShared_));
  if (l.dynamicShared > kernel.sharedLimit) {
    if (Status s = check(api_->funcSetAttribute(kernel.function,
                                                cu::kFuncAttrMaxDynamicShared,
                                                int(l.dynamicShared)),
                         "cuFuncSetAttribute", kernel.name);
        !s)
      return s;
    kernel.sharedLimit = l.dynamicShared;
  }
  void *params[1] = {const_cast<void *>(args)};
  return check(api_->launchKernel(kernel.function, l.grid[0], l.grid[1],
                                  l.grid[2], l.block[0], l.block[1], l.block[2],
                                  unsigned(l.dynamicShared), stream_, params,
                                  nullptr),
               "cuLaunchKernel", kernel.name);
}

Status CudaDevice::synchronize() const {
  if (Status s = notWhileCapturing("synchronize"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  return check(api_->streamSynchronize(stream_), "cuStreamSynchronize",
               "the kernels launched so far");
}

Status CudaDevice::beginCapture() const {
  if (Status s = notWhileCapturing("beginCapture"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  if (Status s = check(
          api_->streamBeginCapture(stream_, cu::kStreamCaptureModeThreadLocal),
          "cuStreamBeginCapture", "a CUDA graph");
      !s)
    return s;
  capturing_ = true;
  return Status::ok();
}

Expected<CudaGraph> CudaDevice::endCapture() const {
  if (!capturing_)
    return Status::internal("endCapture without beginCapture");
  capturing_ = false;
  if (Status s = makeCurrent(); !s)
    return s;
  CudaGraph g;
  g.device_ = this;
  if (Status s = check(api_->streamEndCapture(stream_, &g.graph_),
                       "cuStreamEndCapture", "a CUDA graph");
      !s)
    return s;
  if (Status s = check(api_->graphInstantiate(&g.exec_, g.graph_, 0),
                       "cuGraphInstantiate", "a CUDA graph");
      !s)
    return s;
  return g;
}

Status CudaDevice::launchGraph(const CudaGraph &graph) const {
  if (!graph)
    return Status::internal("launchGraph of an empty graph");
  if (Status s = notWhileCapturing("launchGraph"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  return check(api_->graphLaunch(graph.exec_, stream_), "cuGraphLaunch",
               "a CUDA graph");
}

Expected<double> CudaDevice::time(const std::function<Status()> &body) const {
  if (Status s = notWhileCapturing("time"); !s)
    return s;
  if (Status s = makeCurrent(); !s)
    return s;
  cu::Event start = nullptr, stop = nullptr;
  Status s = check(api_->eventCreate(&start, 0), "cuEventCreate", "timing");
  if (s)
    s = check(api_->eventCreate(&stop, 0), "cuEventCreate", "timing");
  if (s)
    s = check(api_->eventRecord(start, stream_), "cuEventRecord", "timing");
  if (s)
    s = body();
  if (s)
    s = check(api_->eventRecord(stop, stream_), "cuEventRecord", "timing");
  if (s)
    s = check(api_->eventSynchronize(stop), "cuEventSynchronize", "timing");
  float ms = 0;
  if (s)
    s = check(api_->eventElapsedTime(&ms, start, stop), "cuEventElapsedTime",
              "timing");
  if (start)
    api_->eventDestroy(start);
  if (stop)
    api_->eventDestroy(stop);
  if (!s)
    return s;
  return double(ms);
}

EventTimeline::~EventTimeline() {
  for (cu::Event e : events_)
    device_->api_->eventDestroy(e);
}

Status EventTimeline::record() {
  if (Status s = device_->notWhileCapturing("EventTimeline::record"); !s)
    return s;
  if (Status s = device_->makeCurrent(); !s)
    return s;
  if (used_ == events_.size()) {
    cu::Event e = nullptr;
    if (Status s = device_->check(device_->api_->eventCreate(&e, 0),
                                  "cuEventCreate", "profiling");
        !s)
      return s;
    events_.push_back(e);
  }
  if (Status s = device_->check(
          device_->api_->eventRecord(events_[used_], device_->stream_),
          "cuEventRecord", "profiling");
      !s)
    return s;
  ++used_;
  return Status::ok();
}

Expected<std::vector<double>> EventTimeline::intervals() const {
  std::vector<double> out;
  if (used_ < 2)
    return out;
  if (Status s = device_->makeCurrent(); !s)
    return s;
  if (Status s =
          device_->check(device_->api_->eventSynchronize(events_[used_ - 1]),
                         "cuEventSynchronize", "profiling");
      !s)
    return s;
  out.reserve(used_ - 1);
  for (size_t i = 1; i < used_; ++i) {
    float ms = 0;
    if (Status s = device_->check(
            device_->api_->eventElapsedTime(&ms, events_[i - 1], events_[i]),
            "cuEventElapsedTime", "profiling");
        !s)
      return s;
    out.push_back(double(ms));
  }
  return out;
}

} // namespace folio::device
