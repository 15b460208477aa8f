//===- CudaDevice.h - One GPU through the driver API ------------*- C++ -*-===//
//
// What an executor and the GPU checks need from a device: its primary
// context, device memory owned by RAII buffers, copies, modules loaded from
// a cubin or PTX (the driver JITs PTX for its own arch), kernels launched
// with one argument struct by value (how every generated kernel takes its
// arguments), event timing, and CUDA graphs captured from its launches.
// Every operation is ordered on the device's one stream (non-blocking, so
// it can be captured; the legacy default stream cannot): copies to the
// host wait for what came before them, everything else is asynchronous.
// Every call makes the device's context current on the calling thread
// first, so one device may be used from any thread (one at a time). Errors
// name the call, the driver's error and what it was for.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_CUDADEVICE_H
#define FOLIO_RUNTIME_DEVICE_CUDADEVICE_H

#include "runtime/Device/CudaApi.h"
#include "runtime/Support/Status.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace folio::device {

class CudaDevice;

/// Device memory; freed when destroyed (before its device is).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&o) noexcept { *this = std::move(o); }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  cu::DevicePtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /// The address as kernels take it in their argument structs.
  template <typename T> T *as() const {
    return reinterpret_cast<T *>(static_cast<uintptr_t>(ptr_));
  }

private:
  friend class CudaDevice;
  const CudaDevice *device_ = nullptr;
  cu::DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

/// A loaded module (unloaded when destroyed) and its kernels.
class CudaModule {
public:
  CudaModule() = default;
  CudaModule(CudaModule &&o) noexcept { *this = std::move(o); }
  CudaModule &operator=(CudaModule &&o) noexcept;
  CudaModule(const CudaModule &) = delete;
  CudaModule &operator=(const CudaModule &) = delete;
  ~CudaModule();

private:
  friend class CudaDevice;
  const CudaDevice *device_ = nullptr;
  cu::Module module_ = nullptr;
  std::string what_;
};

/// Events recorded in stream order, for per-launch device times
/// (profiling): record() marks the point the device's work has reached,
/// intervals() waits for the last mark and gives the milliseconds between
/// consecutive marks. restart() reuses the events for the next round.
class EventTimeline {
public:
  explicit EventTimeline(const CudaDevice &device) : device_(&device) {}
  EventTimeline(const EventTimeline &) = delete;
  EventTimeline &operator=(const EventTimeline &) = delete;
  ~EventTimeline();

  Status record();
  void restart() { used_ = 0; }
  size_t marks() const { return used_; }
  /// marks() - 1 intervals, in order.
  Expected<std::vector<double>> intervals() const;

private:
  const CudaDevice *device_;
  std::vector<cu::Event> events_;
  size_t used_ = 0;
};

/// An instantiated CUDA graph (destroyed with it): the launches enqueued
/// between CudaDevice::beginCapture and endCapture, replayed by
/// launchGraph with the arguments they had when captured.
class CudaGraph {
public:
  CudaGraph() = default;
  CudaGraph(CudaGraph &&o) noexcept { *this = std::move(o); }
  CudaGraph &operator=(CudaGraph &&o) noexcept;
  CudaGraph(const CudaGraph &) = delete;
  CudaGraph &operator=(const CudaGraph &) = delete;
  ~CudaGraph();

  explicit operator bool() const { return exec_ != nullptr; }

private:
  friend class CudaDevice;
  const CudaDevice *device_ = nullptr;
  cu::Graph graph_ = nullptr;
  cu::GraphExec exec_ = nullptr;
};

/// A kernel of a loaded module (valid while the module is).
struct CudaKernel {
  cu::Function function = nullptr;
  std::string name;
  /// Dynamic shared memory the kernel may take: 48 KiB until a launch
  /// opts in to more (once per size, not per launch).
  mutable size_t sharedLimit = 48 * 1024;
};

struct CudaLaunch {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t dynamicShared = 0;
};

class CudaDevice {
public:
  /// Loads the driver (loadCudaApi), initializes it and retains the
  /// primary context of device `ordinal`; errors say what is missing.
  static Expected<std::unique_ptr<CudaDevice>> open(int ordinal = 0);
  ~CudaDevice();

  const std::string &name() const { return name_; }
  int major() const { return major_; }
  int minor() const { return minor_; }
  /// "sm_90": the arch NVRTC compiles for this device.
  std::string arch() const;
  int multiprocessors() const { return multiprocessors_; }
  size_t totalMemory() const { return totalMemory_; }
  /// The most dynamic shared memory a kernel may opt in to.
  size_t maxDynamicShared() const { return maxDynamicShared_; }
  int driverVersion() const { return driverVersion_; }

  Expected<DeviceBuffer> allocate(size_t bytes, const std::string &what) const;
  Status copyToDevice(const DeviceBuffer &dst, size_t offset, const void *src,
                      size_t bytes) const;
  Status copyToHost(void *dst, const DeviceBuffer &src, size_t offset,
                    size_t bytes) const;
  /// Copies from device memory at `src` that another device of this
  /// context allocated (contextId); the caller vouches for its bounds.
  Status copyToHostFrom(void *dst, cu::DevicePtr src, size_t bytes) const;
  Status copyOnDevice(const DeviceBuffer &dst, const DeviceBuffer &src,
                      size_t bytes) const;
  Status fill(const DeviceBuffer &dst, unsigned char byte) const;
  /// A buffer holding a copy of host bytes.
  Expected<DeviceBuffer> upload(const void *src, size_t bytes,
                                const std::string &what) const;

  /// Loads a cubin, or NUL-terminated PTX that the driver JIT-compiles; a
  /// failure carries the JIT's error log.
  Expected<CudaModule> loadModule(const void *image,
                                  const std::string &what) const;
  Expected<CudaKernel> kernel(const CudaModule &module,
                              const std::string &name) const;
  /// Launches `kernel` with `args`, its one parameter (an argument struct
  /// the driver copies), on the device's stream. Asynchronous:
  /// synchronize() reports faults. Dynamic shared memory beyond 48 KiB is
  /// opted in first. An empty grid launches nothing.
  Status launch(const CudaKernel &kernel, const CudaLaunch &launch,
                const void *args) const;
  /// Waits for everything enqueued so far.
  Status synchronize() const;

  /// Starts capturing: launches (and cuBLASLt's GEMMs on stream()) are
  /// recorded, not run, until endCapture. Copies, fills and timing are
  /// refused meanwhile (they are the host's, outside a graph). Capture
  /// mode is thread-local: calls that could synchronize the device fail
  /// on this thread only.
  Status beginCapture() const;
  /// Ends the capture and instantiates what it recorded. Also the way out
  /// of a capture that failed half way (the result is then discarded).
  Expected<CudaGraph> endCapture() const;
  bool capturing() const { return capturing_; }
  /// Enqueues a graph's launches, in their captured order, on the stream.
  Status launchGraph(const CudaGraph &graph) const;
  /// The stream every operation goes on (cuBLASLt takes it too).
  cu::Stream stream() const { return stream_; }
  /// Milliseconds the device spends on what `body` enqueues, from events
  /// recorded around it.
  Expected<double> time(const std::function<Status()> &body) const;

  /// Identifies the context: devices opened on the same ordinal share its
  /// primary context, and so each other's device addresses.
  const void *contextId() const { return context_; }

  /// Makes the context current on this thread (every call above does); a
  /// driver call only when the thread's current context is another.
  Status makeCurrent() const;

private:
  CudaDevice() = default;
  Status check(cu::Result r, const std::string &call,
               const std::string &what) const;
  friend class DeviceBuffer;
  friend class CudaModule;
  friend class EventTimeline;
  friend class CudaGraph;
  /// An error when capturing: `call` cannot be part of a graph.
  Status notWhileCapturing(const char *call) const;

  const CudaApi *api_ = nullptr;
  cu::Device device_ = 0;
  cu::Context context_ = nullptr;
  cu::Stream stream_ = nullptr;
  mutable bool capturing_ = false;
  std::string name_;
  int major_ = 0, minor_ = 0, multiprocessors_ = 0, driverVersion_ = 0;
  size_t totalMemory_ = 0, maxDynamicShared_ = 0;
};

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_CUDADEVICE_H
