//===- FakeDriver.h - Generated kernels on the fake CUDA driver -*- C++ -*-===//
//
// Tests that run generated kernels through runtime/Device (as an executor
// does) without a GPU register each kernel, compiled as host C++ against
// the emulation, with the fake driver (test/unittests/Device/
// FakeCudaDevice.cpp), whose cuLaunchKernel then runs it. Include after
// codegen/CUDA/Emulation/Emulation.h.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_FAKEDRIVER_H
#define FOLIO_TEST_UNITTESTS_CUDA_FAKEDRIVER_H

#include "codegen/CUDA/Emulation/Runtime.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <dlfcn.h>
#include <string>

namespace folio::cuda::test {

/// Runs one registered kernel: the argument struct the launch passed,
/// through the emulation.
template <typename Args>
void emulate(void *ctx, void **params, const unsigned grid[3],
             const unsigned block[3], unsigned shared) {
  cuda_emu::LaunchConfig c;
  c.grid = {grid[0], grid[1], grid[2]};
  c.block = {block[0], block[1], block[2]};
  c.dynamicShared = shared;
  c.kernelName = "fake driver launch";
  // Tests whose kernels use no float atomics may run blocks on several
  // threads (whole-model forwards: thousands of blocks per step).
  if (const char *w = ::getenv("FOLIO_FAKE_CUDA_WORKERS"))
    c.workers = unsigned(std::max(1, std::atoi(w)));
  cuda_emu::launch(c, reinterpret_cast<void (*)(Args)>(ctx),
                   *static_cast<const Args *>(params[0]));
}

using LaunchFn = void (*)(void *, void **, const unsigned *, const unsigned *,
                          unsigned);

/// The fake driver's folioFakeCudaRegister: a kernel's name, how to run
/// it, the size of its argument struct (a captured launch copies it) and
/// its host entry point.
class RegisterFn {
public:
  using Raw = void (*)(const char *, LaunchFn, void *, size_t);
  RegisterFn(std::nullptr_t = nullptr) {}
  explicit RegisterFn(Raw raw) : raw_(raw) {}
  explicit operator bool() const { return raw_ != nullptr; }
  void operator()(const char *name, LaunchFn run, size_t argBytes,
                  void *kernel) const {
    raw_(name, run, kernel, argBytes);
  }

private:
  Raw raw_ = nullptr;
};

/// Points the runtime at the fake driver (and the fake cuBLASLt) and
/// returns its registration entry point, or null with `error` set.
inline RegisterFn useFakeDriver(const char *driver, const char *cublasLt,
                                std::string &error) {
  ::setenv("FOLIO_LIBCUDA_PATH", driver, 1);
  ::setenv("FOLIO_LIBCUBLASLT_PATH", cublasLt, 1);
  void *lib = ::dlopen(driver, RTLD_NOW | RTLD_LOCAL);
  RegisterFn reg(lib ? reinterpret_cast<RegisterFn::Raw>(
                           ::dlsym(lib, "folioFakeCudaRegister"))
                     : nullptr);
  if (!reg)
    error = "cannot load the fake driver " + std::string(driver);
  return reg;
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_FAKEDRIVER_H
