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
#include <string>

namespace {

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
              kInvalidImage = 200, kInvalidContext = 201, kNotFound = 500;
constexpr size_t kDefaultShared = 48 * 1024, kOptinShared = 227 * 1024;

using LaunchFn = void (*)(void *ctx, void **params, const unsigned grid[3],
                          const unsigned block[3], unsigned shared);

struct Kernel {
  LaunchFn run = nullptr;
  void *ctx = nullptr;
  int maxShared = int(kDefaultShared);
};

struct Module {
  std::string image;
};

struct State {
  std::mutex mu;
  std::map<uintptr_t, size_t> allocations; // start -> bytes
  size_t allocated = 0;
  std::map<std::string, Kernel> kernels; // registered implementations
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

} // namespace

extern "C" {

/// Registers the host implementation of kernel `name`; ctx is passed back
/// to `run` at each launch.
void folioFakeCudaRegister(const char *name, LaunchFn run, void *ctx) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.kernels[name] = Kernel{run, ctx, int(kDefaultShared)};
}

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
int cuCtxSynchronize() { return kSuccess; }

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
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t bytes) {
  if (!live(dst, bytes))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, bytes);
  return kSuccess;
}
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes) {
  if (!live(src, bytes))
    return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<const void *>(uintptr_t(src)), bytes);
  return kSuccess;
}
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src,
                    size_t bytes) {
  if (!live(dst, bytes) || !live(src, bytes))
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(uintptr_t(dst)),
               reinterpret_cast<const void *>(uintptr_t(src)), bytes);
  return kSuccess;
}
int cuMemsetD8_v2(unsigned long long dst, unsigned char byte, size_t bytes) {
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
  if (stream || extra || !params || !params[0])
    return kInvalidValue;
  if (gx == 0 || gy == 0 || gz == 0 || bx * by * bz == 0 ||
      bx * by * bz > 1024 || int(shared) > k.maxShared)
    return kInvalidValue;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  k.run(k.ctx, params, grid, block, shared);
  return kSuccess;
}

int cuEventCreate(void **e, unsigned) {
  *e = new std::chrono::steady_clock::time_point();
  return kSuccess;
}
int cuEventRecord(void *e, void *) {
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
