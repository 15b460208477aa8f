//===- DeviceSelection.cpp - --device cpu|cuda|auto -----------------------===//

#include "runtime/Device/DeviceSelection.h"

#include "runtime/Device/CudaDriver.h"
#include "runtime/Device/KernelImages.h"
#include "runtime/Device/PlanLaunches.h"

namespace folio::device {

std::optional<DeviceKind> parseDeviceKind(const std::string &s) {
  if (s == "cpu")
    return DeviceKind::Cpu;
  if (s == "cuda")
    return DeviceKind::Cuda;
  if (s == "auto")
    return DeviceKind::Auto;
  return std::nullopt;
}

const char *deviceKindName(DeviceKind k) {
  switch (k) {
  case DeviceKind::Cpu:
    return "cpu";
  case DeviceKind::Cuda:
    return "cuda";
  case DeviceKind::Auto:
    return "auto";
  }
  return "?";
}

namespace {

/// Device 0 as messages name it.
std::string describe(const CudaDriverInfo &driver) {
  const CudaDeviceInfo &d = driver.devices.front();
  return "device 0 (" + d.name + ", sm_" + std::to_string(d.major) +
         std::to_string(d.minor) + ", driver " +
         std::to_string(driver.driverVersion) + ")";
}

/// Why the CUDA executor cannot run `plan` on `driver`'s device 0, or ""
/// when it can: kernel images for the device, and a launch for every
/// kernel of the plan.
std::string whyNotOnDevice(const CudaDriverInfo &driver,
                           const plan::Plan &plan) {
  const CudaDeviceInfo &d = driver.devices.front();
  Expected<std::vector<KernelImage>> images =
      selectKernelImages(plan, d.major, d.minor);
  if (!images)
    return describe(driver) + ": " + images.status().message();
  PlanLaunches launches;
  if (Status s = planLaunches(plan, launches); !s)
    return s.message();
  for (size_t k = 0; k < launches.kernels.size(); ++k)
    if (!launches.kernels[k].complete)
      return "the plan's " + plan.kernels[k].kind +
             " kernel has no CUDA kernel for " + launches.kernels[k].why;
  return "";
}

} // namespace

Expected<DeviceChoice> selectDevice(DeviceKind requested,
                                    const plan::Plan *plan) {
  DeviceChoice choice;
  if (requested == DeviceKind::Cpu)
    return choice;
  std::string flag = std::string("--device ") + deviceKindName(requested);
  // No GPU here: the CPU runs, saying why (one binary serves both kinds
  // of machine).
  Expected<CudaDriverInfo> driver = probeCudaDriver();
  if (!driver) {
    choice.notice =
        flag + ": running on the CPU (" + driver.status().message() + ")";
    return choice;
  }
  // A GPU, and a plan it cannot run: `cuda` asked for the GPU, so that is
  // an error; `auto` takes the CPU.
  std::string why =
      plan ? whyNotOnDevice(*driver, *plan)
           : describe(*driver) +
                 " is there, but this tool runs its work on the CPU "
                 "executor only (the GPU's check is tools/gpu-check.sh)";
  if (why.empty()) {
    choice.device = DeviceKind::Cuda;
    choice.notice = flag + ": running on " + describe(*driver);
    return choice;
  }
  if (requested == DeviceKind::Cuda)
    return Status::invalidArgument(flag + ": " + why +
                                   "; run with --device cpu (or auto)");
  choice.notice = flag + ": running on the CPU (" + why + ")";
  return choice;
}

} // namespace folio::device
