//===- FakeCudaDevice.cpp - A driver whose device is the host -------------===//
//
// A stand-in for libcuda.so.1 with the whole API CudaDevice uses, for
// tests on machines without a GPU (FOLIO_LIBCUDA_PATH points at it):
// - memory is host memory; every device pointer a call takes must lie in
//   a live allocation (else CUDA_ERROR_INVALID_VALUE), and
//   FOLIO_FAKE_CUDA_MEMORY caps the bytes allocated (then
//   CUDA_ERROR_OUT_OF_MEMORY);
// - a module is its image: NUL-terminated PTX, or a cubin sized from its
//   ELF header. A kernel exists if its name is in the image and the test
//   registered a host implementation for it (folioFakeCudaRegister: the
//   generated kernel compiled as host C++ against the emulation), which
//   cuLaunchKernel runs synchronously;
// - launches check the block size and the dynamic shared memory (over
//   48 KiB needs cuFuncSetAttribute first, as on a device);
// - streams run what they get at once, in order (the host is the device);
// - a stream being captured records launches (their argument structs
//   copied, as the driver copies kernel parameters) and work other
//   libraries enqueue (folioFakeCudaEnqueue: the fake cuBLASLt's GEMMs)
//   instead of running them; copies, fills, events and synchronization on
//   it fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, stricter than a
//   driver, which would capture some of them. A graph launch replays the
//   recording; FOLIO_FAKE_CUDA_FAIL_GRAPHS=instantiate or =launch makes
//   cuGraphInstantiateWithFlags or cuGraphLaunch fail with
//   CUDA_ERROR_NOT_SUPPORTED, as a driver without a graph feature would;
// - events read the host's steady clock.
// FOLIO_FAKE_CUDA_CC sets the compute capability (major * 10 + minor,
// default 90).
//
//===----------------------------------------------------------------------===//

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
              kInvalidImage = 200, kInvalidContext = 201, kInvalidHandle = 400,
              kNotFound = 500, kNotSupported = 801, kCaptureUnsupported = 900;
constexpr size_t kDefaultShared = 48 * 1024, kOptinShared = 227 * 1024;

using LaunchFn = void (*)(void *ctx, void **params, const unsigned grid[3],
                          const unsigned block[3], unsigned shared);

struct Kernel {
  LaunchFn run = nullptr;
  void *ctx = nullptr;
  size_t argBytes = 0; ///< the argument struct's size (for captures)
  int maxShared = int(kDefaultShared);
};

/// One recorded operation: a kernel launch, or a host function another
/// library enqueued, each with a copy of its argument bytes.
struct Op {
  const Kernel *kernel = nullptr;
  void (*host)(const void *) = nullptr;
  std::vector<unsigned char> args;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;

  void run() const {
    if (host) {
      host(args.data());
      return;
    }
    void *params[1] = {const_cast<unsigned char *>(args.data())};
    kernel->run(kernel->ctx, params, grid, block, shared);
  }
};

struct Stream {
  bool capturing = false;
  std::vector<Op> recorded;
};

struct Graph {
  std::vector<Op> ops;
};

struct Module {
  std::string image;
};

struct State {
  std::mutex mu;
  std::map<uintptr_t, size_t> allocations; // start -> bytes
  size_t allocated = 0;
  std::map<std::string, Kernel> kernels; // registered implementations
  std::set<Stream *> streams;
  long graphLaunches = 0, captures = 0, directLaunches = 0;
};

State &state() {
  // Never destroyed: devices released at exit still free through it.
  static State *s = new State;
  return *s;
}

int context; // the primary context's handle is its address

long long env(const char *name, long long dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoll(v) : dflt;
}

/// Whether [p, p + bytes) lies in one live allocation.
bool live(unsigned long long p, size_t bytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.upper_bound(uintptr_t(p));
  if (it == s.allocations.begin())
    return false;
  --it;
  return uintptr_t(p) + bytes <= it->first + it->second;
}

/// Whether `stream` is the legacy default stream (null) or one created
/// here; `*out` the latter.
bool knownStream(void *stream, Stream **out) {
  *out = static_cast<Stream *>(stream);
  if (!stream)
    return true;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.streams.count(*out) != 0;
}

/// The result of a copy, fill or synchronization on `stream`: invalid for
/// an unknown stream, unsupported while it is captured.
int plainStreamOp(void *stream) {
  Stream *st = nullptr;
  if (!knownStream(stream, &st))
    return kInvalidHandle;
  return st && st->capturing ? kCaptureUnsupported : kSuccess;
}

} // namespace

extern "C" {

/// Registers the host implementation of kernel `name` whose argument
/// struct is `argBytes` long; ctx is passed back to `run` at each launch.
void folioFakeCudaRegister(const char *name, LaunchFn run, void *ctx,
                           size_t argBytes) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.kernels[name] = Kernel{run, ctx, argBytes, int(kDefaultShared)};
}

/// Runs fn(ctx) now, in stream order, or records it (a copy of ctx's
/// `bytes`) when `stream` is being captured: how the fake cuBLASLt
/// enqueues its GEMMs.
int folioFakeCudaEnqueue(void *stream, void (*fn)(const void *),
                         const void *ctx, size_t bytes) {
  Stream *st = nullptr;
  if (!knownStream(stream, &st))
    return kInvalidHandle;
  if (!st || !st->capturing) {
    fn(ctx);
    return kSuccess;
  }
  Op op;
  op.host = fn;
  const auto *p = static_cast<const unsigned char *>(ctx);
  op.args.assign(p, p + bytes);
  st->recorded.push_back(std::move(op));
  return kSuccess;
}

/// Graph launches, captures ended and kernels launched outside a graph so
/// far: tests check which path an executor took.
long folioFakeCudaGraphLaunches() { return state().graphLaunches; }
long folioFakeCudaCaptures() { return state().captures; }
long folioFakeCudaDirectLaunches() { return state().directLaunches; }

/// cuFuncSetAttribute calls so far (launch opt-ins).
int setAttributeCalls = 0;
int folioFakeCudaSetAttributeCalls() { return setAttributeCalls; }

/// Bytes allocated and not freed.
size_t folioFakeCudaAllocatedBytes() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.allocated;
}

int cuInit(unsigned) { return kSuccess; }
int cuDriverGetVersion(int *v) {
  *v = 13000;
  return kSuccess;
}
int cuDeviceGetCount(int *n) {
  *n = 1;
  return kSuccess;
}
int cuDeviceGet(int *dev, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *dev = 0;
  return kSuccess;
}
int cuDeviceGetAttribute(int *v, int attr, int) {
  int cc = int(env("FOLIO_FAKE_CUDA_CC", 90));
  switch (attr) {
  case 16: // multiprocessors
    *v = 132;
    return kSuccess;
  case 75:
    *v = cc / 10;
    return kSuccess;
  case 76:
    *v = cc % 10;
    return kSuccess;
  case 97: // opt-in shared memory per block
    *v = int(kOptinShared);
    return kSuccess;
  default:
    return kInvalidValue;
  }
}
int cuDeviceGetName(char *name, int len, int) {
  std::strncpy(name, "Fake GPU (host emulation)", size_t(len));
  return kSuccess;
}
int cuDeviceTotalMem_v2(size_t *bytes, int) {
  *bytes = size_t(env("FOLIO_FAKE_CUDA_MEMORY", 1ll << 30));
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = &context;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuCtxSetCurrent(void *ctx) {
  return ctx == &context ? kSuccess : kInvalidContext;
}

int cuStreamCreate(void **stream, unsigned) {
  auto *st = new Stream;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.streams.insert(st);
  *stream = st;
  return kSuccess;
}
int cuStreamDestroy_v2(void *stream) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.streams.erase(static_cast<Stream *>(stream)))
    return kInvalidHandle;
  delete static_cast<Stream *>(stream);
  return kSuccess;
}
int cuStreamSynchronize(void *stream) { return plainStreamOp(stream); }

int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  if (bytes == 0)
    return kInvalidValue;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  size_t cap = size_t(env("FOLIO_FAKE_CUDA_MEMORY", 1ll << 30));
  if (s.allocated + bytes > cap)
    return kOutOfMemory;
  void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!m)
    return kOutOfMemory;
  *p = uintptr_t(m);
  s.allocations[uintptr_t(m)] = bytes;
  s.allocated += bytes;
  return kSuccess;
}
int cuMemFree_v2(unsigned long long p) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(uintptr_t(p));
  if (it == s.allocations.end())
    return kInvalidValue;
  s.allocated -= it->second;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(uintptr_t(p)));
  return kSuccess;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t bytes,
                         void *stream) {
  if (int r = plainStreamOp(stream); r != kSuccess)
    return r;
  if (!live(dst, bytes))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, bytes);
  return kSuccess;
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t bytes,
                         void *stream) {
  if (int r = plainStreamOp(stream); r != kSuccess)
    return r;
  if (!live(src, bytes))
    return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<const void *>(uintptr_t(src)), bytes);
  return kSuccess;
}
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src,
                         size_t bytes, void *stream) {
  if (int r = plainStreamOp(stream); r != kSuccess)
    return r;
  if (!live(dst, bytes) || !live(src, bytes))
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(uintptr_t(dst)),
               reinterpret_cast<const void *>(uintptr_t(src)), bytes);
  return kSuccess;
}
int cuMemsetD8Async(unsigned long long dst, unsigned char byte, size_t bytes,
                    void *stream) {
  if (int r = plainStreamOp(stream); r != kSuccess)
    return r;
  if (!live(dst, bytes))
    return kInvalidValue;
  std::memset(reinterpret_cast<void *>(uintptr_t(dst)), byte, bytes);
  return kSuccess;
}

int cuModuleLoadDataEx(void **module, const void *image, unsigned, int *,
                       void **) {
  const char *p = static_cast<const char *>(image);
  size_t bytes;
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    // 64-bit ELF: the section headers end the file.
    uint64_t shoff;
    uint16_t shentsize, shnum;
    std::memcpy(&shoff, p + 0x28, 8);
    std::memcpy(&shentsize, p + 0x3a, 2);
    std::memcpy(&shnum, p + 0x3c, 2);
    bytes = size_t(shoff) + size_t(shentsize) * shnum;
  } else if (std::strstr(p, ".entry") || std::strstr(p, ".version")) {
    bytes = std::strlen(p);
  } else {
    return kInvalidImage;
  }
  *module = new Module{std::string(p, bytes)};
  return kSuccess;
}
int cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  return kSuccess;
}
int cuModuleGetFunction(void **f, void *module, const char *name) {
  const std::string &image = static_cast<Module *>(module)->image;
  if (image.find(name) == std::string::npos)
    return kNotFound;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.kernels.find(name);
  if (it == s.kernels.end())
    return kNotFound;
  *f = &it->second;
  return kSuccess;
}
int cuFuncSetAttribute(void *f, int attr, int value) {
  ++setAttributeCalls;
  if (attr != 8 || value < 0 || size_t(value) > kOptinShared)
    return kInvalidValue;
  static_cast<Kernel *>(f)->maxShared = value;
  return kSuccess;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned shared, void *stream,
                   void **params, void **extra) {
  const Kernel &k = *static_cast<Kernel *>(f);
  Stream *st = nullptr;
  if (!knownStream(stream, &st))
    return kInvalidHandle;
  if (extra || !params || !params[0])
    return kInvalidValue;
  if (gx == 0 || gy == 0 || gz == 0 || bx * by * bz == 0 ||
      bx * by * bz > 1024 || int(shared) > k.maxShared)
    return kInvalidValue;
  Op op;
  op.kernel = &k;
  op.grid[0] = gx, op.grid[1] = gy, op.grid[2] = gz;
  op.block[0] = bx, op.block[1] = by, op.block[2] = bz;
  op.shared = shared;
  if (st && st->capturing) {
    // The driver copies the parameters when the launch is captured: a
    // graph replays them as they were then.
    if (k.argBytes == 0)
      return kCaptureUnsupported; // registered without its size
    const auto *p = static_cast<const unsigned char *>(params[0]);
    op.args.assign(p, p + k.argBytes);
    st->recorded.push_back(std::move(op));
    return kSuccess;
  }
  ++state().directLaunches;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  k.run(k.ctx, params, grid, block, shared);
  return kSuccess;
}

int cuStreamBeginCapture_v2(void *stream, int mode) {
  Stream *st = nullptr;
  if (!stream || !knownStream(stream, &st))
    return kCaptureUnsupported; // the legacy stream cannot be captured
  if (mode < 0 || mode > 2 || st->capturing)
    return kInvalidValue;
  st->capturing = true;
  st->recorded.clear();
  return kSuccess;
}
int cuStreamEndCapture(void *stream, void **graph) {
  Stream *st = nullptr;
  if (!stream || !knownStream(stream, &st) || !st->capturing)
    return kInvalidValue;
  st->capturing = false;
  *graph = new Graph{std::move(st->recorded)};
  st->recorded.clear();
  ++state().captures;
  return kSuccess;
}
/// Whether FOLIO_FAKE_CUDA_FAIL_GRAPHS names `call`.
bool failGraphs(const char *call) {
  const char *v = std::getenv("FOLIO_FAKE_CUDA_FAIL_GRAPHS");
  return v && std::strcmp(v, call) == 0;
}

int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  if (!graph)
    return kInvalidValue;
  if (failGraphs("instantiate"))
    return kNotSupported;
  *exec = new Graph(*static_cast<Graph *>(graph));
  return kSuccess;
}
int cuGraphLaunch(void *exec, void *stream) {
  if (int r = plainStreamOp(stream); r != kSuccess)
    return r;
  if (!exec)
    return kInvalidValue;
  if (failGraphs("launch"))
    return kNotSupported;
  ++state().graphLaunches;
  for (const Op &op : static_cast<Graph *>(exec)->ops)
    op.run();
  return kSuccess;
}
int cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return kSuccess;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return kSuccess;
}

int cuEventCreate(void **e, unsigned) {
  *e = new std::chrono::steady_clock::time_point();
  return kSuccess;
}
int cuEventRecord(void *e, void *stream) {
  if (int r = plainStreamOp(stream); r != kSuccess)
    return r;
  *static_cast<std::chrono::steady_clock::time_point *>(e) =
      std::chrono::steady_clock::now();
  return kSuccess;
}
int cuEventSynchronize(void *) { return kSuccess; }
int cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  using T = std::chrono::steady_clock::time_point;
  *ms = std::chrono::duration<float, std::milli>(*static_cast<T *>(b) -
                                                 *static_cast<T *>(a))
            .count();
  return kSuccess;
}
int cuEventDestroy_v2(void *e) {
  delete static_cast<std::chrono::steady_clock::time_point *>(e);
  return kSuccess;
}

int cuGetErrorName(int r, const char **name) {
  switch (r) {
  case kInvalidValue:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return kSuccess;
  case kOutOfMemory:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return kSuccess;
  case kInvalidImage:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    return kSuccess;
  case kNotFound:
    *name = "CUDA_ERROR_NOT_FOUND";
    return kSuccess;
  case kInvalidHandle:
    *name = "CUDA_ERROR_INVALID_HANDLE";
    return kSuccess;
  case kNotSupported:
    *name = "CUDA_ERROR_NOT_SUPPORTED";
    return kSuccess;
  case kCaptureUnsupported:
    *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    return kSuccess;
  default:
    return kInvalidValue;
  }
}
int cuGetErrorString(int r, const char **text) {
  if (r == kOutOfMemory) {
    *text = "out of memory";
    return kSuccess;
  }
  return kInvalidValue;
}

} // extern "C"
