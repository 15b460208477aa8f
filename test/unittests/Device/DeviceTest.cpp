//===- DeviceTest.cpp - The CUDA driver loader and --device ---------------===//
//
// No GPU is needed: FOLIO_LIBCUDA_PATH points the loader at a path that
// does not exist, at a library that is not a driver (libc), or at a fake
// driver (FakeCuda.cpp) whose answers the FOLIO_FAKE_CUDA_* variables set.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device/CudaDevice.h"
#include "runtime/Device/CudaDriver.h"
#include "runtime/Device/DeviceSelection.h"
#include "runtime/Device/KernelImages.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

using namespace folio;
using namespace folio::device;

namespace {

/// Sets environment variables for one test and restores them after.
class ScopedEnv {
public:
  void set(const char *name, const std::string &value) {
    if (!saved.count(name)) {
      const char *old = std::getenv(name);
      saved[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto &[name, value] : saved)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }

private:
  std::map<std::string, std::optional<std::string>> saved;
};

std::string probeError() {
  Expected<CudaDriverInfo> info = probeCudaDriver();
  return info ? std::string("(no error)") : info.status().message();
}

TEST(CudaDriver, DefaultLibraryIsLibcudaSo1) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", "");
  EXPECT_EQ(cudaDriverLibrary(), "libcuda.so.1");
}

TEST(CudaDriver, MissingLibrary) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", "/nonexistent/libcuda.so.1");
  std::string e = probeError();
  EXPECT_EQ(
      e.rfind("no CUDA driver: cannot load /nonexistent/libcuda.so.1 (", 0), 0u)
      << e;
  EXPECT_NE(e.find("); the NVIDIA driver is not installed or not on the "
                   "loader path"),
            std::string::npos)
      << e;
}

TEST(CudaDriver, LibraryWithoutTheDriverEntryPoints) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", "libc.so.6");
  EXPECT_EQ(probeError(),
            "the CUDA driver libc.so.6 lacks the entry points cuInit, "
            "cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, "
            "cuDeviceGetAttribute, cuDeviceGetName (not a CUDA driver "
            "library, or too old)");
}

TEST(CudaDriver, InitializationFails) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA);
  env.set("FOLIO_FAKE_CUDA_INIT", "3");
  EXPECT_EQ(probeError(), std::string("the CUDA driver ") + FOLIO_FAKE_CUDA +
                              " failed to initialize (cuInit: "
                              "CUDA_ERROR_NOT_INITIALIZED (3))");
  // A code the driver has no name for is still reported.
  env.set("FOLIO_FAKE_CUDA_INIT", "999");
  EXPECT_EQ(probeError(), std::string("the CUDA driver ") + FOLIO_FAKE_CUDA +
                              " failed to initialize (cuInit: CUDA error "
                              "999)");
}

TEST(CudaDriver, NoDevice) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA);
  env.set("FOLIO_FAKE_CUDA_INIT", "100");
  EXPECT_EQ(probeError(), std::string("no CUDA device: the driver ") +
                              FOLIO_FAKE_CUDA +
                              " found none (cuInit: CUDA_ERROR_NO_DEVICE "
                              "(100))");
  env.set("FOLIO_FAKE_CUDA_INIT", "0");
  env.set("FOLIO_FAKE_CUDA_DEVICES", "0");
  EXPECT_EQ(probeError(), std::string("no CUDA device: the driver ") +
                              FOLIO_FAKE_CUDA + " reports none");
}

TEST(CudaDriver, ListsDevicesWithTheirComputeCapability) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA);
  env.set("FOLIO_FAKE_CUDA_INIT", "0");
  env.set("FOLIO_FAKE_CUDA_DEVICES", "2");
  env.set("FOLIO_FAKE_CUDA_CC", "89");
  Expected<CudaDriverInfo> info = probeCudaDriver();
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->driverVersion, 13000);
  ASSERT_EQ(info->devices.size(), 2u);
  EXPECT_EQ(info->devices[1].ordinal, 1);
  EXPECT_EQ(info->devices[1].name, "Fake GPU");
  EXPECT_EQ(info->devices[1].major, 8);
  EXPECT_EQ(info->devices[1].minor, 9);
}

/// A plan with records only: image selection reads names and archs.
plan::Plan planWith(std::vector<std::pair<std::string, std::string>> nameArch) {
  plan::Plan p;
  for (const auto &[name, arch] : nameArch) {
    plan::DeviceKernel k;
    k.name = name;
    k.arch = arch;
    p.deviceKernels.push_back(k);
  }
  return p;
}

/// "name:arch:cubin|ptx, ..." for the images chosen on major.minor.
std::string chosen(const plan::Plan &p, int major, int minor) {
  Expected<std::vector<KernelImage>> images =
      selectKernelImages(p, major, minor);
  if (!images)
    return images.status().message();
  std::string s;
  for (const KernelImage &i : *images)
    s += (s.empty() ? "" : ", ") + i.kernel->name + ":" + i.kernel->arch +
         (i.format == KernelImage::Format::Cubin ? ":cubin" : ":ptx");
  return s;
}

TEST(CudaDevice, OpeningSaysWhatIsMissing) {
  ScopedEnv env;
  auto openError = [] {
    Expected<std::unique_ptr<CudaDevice>> d = CudaDevice::open(0);
    return d ? std::string("(no error)") : d.status().message();
  };
  env.set("FOLIO_LIBCUDA_PATH", "/nonexistent/libcuda.so.1");
  EXPECT_NE(openError().find("no CUDA driver: cannot load "
                             "/nonexistent/libcuda.so.1"),
            std::string::npos)
      << openError();
  // The probe's fake has what probing needs, not memory or launches.
  env.set("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA);
  std::string e = openError();
  EXPECT_NE(e.find("lacks the entry points cuDeviceTotalMem_v2, "
                   "cuDevicePrimaryCtxRetain"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("cuLaunchKernel"), std::string::npos) << e;
  // The whole API: a device that does not exist is named.
  env.set("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA_DEVICE);
  Expected<std::unique_ptr<CudaDevice>> missing = CudaDevice::open(3);
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(missing.status().message(),
            "CUDA device 3 does not exist; the driver reports 1 (0 to 0)");
  Expected<std::unique_ptr<CudaDevice>> d = CudaDevice::open(0);
  ASSERT_TRUE(bool(d)) << d.status().message();
  EXPECT_EQ((*d)->arch(), "sm_90");
  EXPECT_EQ((*d)->multiprocessors(), 132);
  EXPECT_EQ((*d)->maxDynamicShared(), size_t(227 * 1024));
  EXPECT_EQ((*d)->driverVersion(), 13000);
  env.set("FOLIO_FAKE_CUDA_CC", "89");
  Expected<std::unique_ptr<CudaDevice>> ada = CudaDevice::open(0);
  ASSERT_TRUE(bool(ada));
  EXPECT_EQ((*ada)->arch(), "sm_89");
}

TEST(KernelImages, CubinOfTheMajorElsePtx) {
  plan::Plan p = planWith({{"a", "sm_80"}, {"a", "sm_90a"}, {"b", "sm_86"}});
  EXPECT_EQ(chosen(p, 8, 0), "the plan's CUDA kernel b has no cubin or PTX "
                             "that runs on sm_80 (the plan holds sm_80, "
                             "sm_86, sm_90a); compile it with folioc "
                             "--target=sm_80");
  EXPECT_EQ(chosen(p, 8, 6), "a:sm_80:cubin, b:sm_86:cubin");
  // An older minor's cubin runs; the newest one is taken.
  EXPECT_EQ(chosen(p, 8, 9), "a:sm_80:cubin, b:sm_86:cubin");
  // sm_90a is for exactly sm_90; sm_86's PTX is JIT-compiled there.
  EXPECT_EQ(chosen(p, 9, 0), "a:sm_90a:cubin, b:sm_86:ptx");
  // A newer major JITs PTX, never the arch-specific one.
  EXPECT_EQ(chosen(p, 12, 0), "a:sm_80:ptx, b:sm_86:ptx");
  EXPECT_EQ(chosen(p, 7, 5),
            "the plan's CUDA kernel a has no cubin or PTX that runs on sm_75 "
            "(the plan holds sm_80, sm_86, sm_90a); Folio's CUDA kernels "
            "need sm_80 or newer");
  EXPECT_EQ(chosen(plan::Plan(), 9, 0),
            "the plan has no CUDA kernels (it was compiled for the CPU); "
            "compile it with folioc --target=sm_90a");
}

TEST(DeviceSelection, ParsesTheFlag) {
  EXPECT_EQ(parseDeviceKind("cpu"), DeviceKind::Cpu);
  EXPECT_EQ(parseDeviceKind("cuda"), DeviceKind::Cuda);
  EXPECT_EQ(parseDeviceKind("auto"), DeviceKind::Auto);
  EXPECT_EQ(parseDeviceKind("gpu"), std::nullopt);
  EXPECT_EQ(parseDeviceKind("CUDA"), std::nullopt);
}

TEST(DeviceSelection, CpuNeverLooksForADriver) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", "/nonexistent/libcuda.so.1");
  Expected<DeviceChoice> c = selectDevice(DeviceKind::Cpu, nullptr);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->device, DeviceKind::Cpu);
  EXPECT_EQ(c->notice, "");
}

TEST(DeviceSelection, WithoutADriverCudaAndAutoRunOnTheCpu) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", "/nonexistent/libcuda.so.1");
  plan::Plan p;
  for (DeviceKind k : {DeviceKind::Cuda, DeviceKind::Auto}) {
    Expected<DeviceChoice> c = selectDevice(k, &p);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->device, DeviceKind::Cpu);
    EXPECT_EQ(c->notice.rfind(std::string("--device ") + deviceKindName(k) +
                                  ": running on the CPU (no CUDA driver: "
                                  "cannot load /nonexistent/libcuda.so.1",
                              0),
              0u)
        << c->notice;
    EXPECT_EQ(c->notice.find('\n'), std::string::npos);
    // A tool without a GPU path does the same.
    c = selectDevice(k, nullptr);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->device, DeviceKind::Cpu);
  }
}

// With a driver and a device, both run on it when the plan has kernels for
// it and every part of the plan has a generated kernel; otherwise `cuda`
// says what is missing and `auto` takes the CPU.
TEST(DeviceSelection, WithADeviceThePlanDecides) {
  ScopedEnv env;
  env.set("FOLIO_LIBCUDA_PATH", FOLIO_FAKE_CUDA);
  env.set("FOLIO_FAKE_CUDA_INIT", "0");
  env.set("FOLIO_FAKE_CUDA_DEVICES", "1");
  env.set("FOLIO_FAKE_CUDA_CC", "90");
  plan::Plan p = planWith({{"a", "sm_90a"}, {"b", "sm_86"}});
  for (DeviceKind k : {DeviceKind::Cuda, DeviceKind::Auto}) {
    Expected<DeviceChoice> c = selectDevice(k, &p);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->device, DeviceKind::Cuda);
    EXPECT_EQ(c->notice, std::string("--device ") + deviceKindName(k) +
                             ": running on device 0 (Fake GPU, sm_90, "
                             "driver 13000)");
  }
  plan::Plan cpuPlan;
  Expected<DeviceChoice> c = selectDevice(DeviceKind::Cuda, &cpuPlan);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message(),
            "--device cuda: device 0 (Fake GPU, sm_90, driver 13000): the "
            "plan has no CUDA kernels (it was compiled for the CPU); compile "
            "it with folioc --target=sm_90a; run with --device cpu (or "
            "auto)");
  Expected<DeviceChoice> a = selectDevice(DeviceKind::Auto, &cpuPlan);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->device, DeviceKind::Cpu);
  EXPECT_EQ(a->notice.rfind("--device auto: running on the CPU (device 0 "
                            "(Fake GPU, sm_90, driver 13000): the plan has no "
                            "CUDA kernels",
                            0),
            0u)
      << a->notice;

  // A kernel no CUDA generator covers (a transpose).
  plan::Plan transposing = planWith({{"a", "sm_90a"}});
  plan::ValueInfo in, out;
  in.dims = {4, 8};
  out.dims = {8, 4};
  transposing.values = {in, out};
  plan::Step step;
  step.kind = "transpose";
  step.name = "node 'T'";
  step.operands = {0};
  step.results = {1};
  transposing.steps = {step};
  plan::Kernel kernel;
  kernel.kind = "transpose";
  kernel.numSteps = 1;
  kernel.inputs = {0};
  kernel.outputs = {1};
  transposing.kernels = {kernel};
  c = selectDevice(DeviceKind::Cuda, &transposing);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message(),
            "--device cuda: the plan's transpose kernel has no CUDA kernel "
            "for transpose at node 'T': a transpose step; run with --device "
            "cpu (or auto)");
  a = selectDevice(DeviceKind::Auto, &transposing);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->device, DeviceKind::Cpu);

  // A tool that runs only on the CPU executor.
  c = selectDevice(DeviceKind::Cuda, nullptr);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message(),
            "--device cuda: device 0 (Fake GPU, sm_90, driver 13000) is "
            "there, but this tool runs its work on the CPU executor only (the "
            "GPU's check is tools/gpu-check.sh); run with --device cpu (or "
            "auto)");
}

} // namespace
