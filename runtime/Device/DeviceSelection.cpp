//===- DeviceSelection.cpp - --device cpu|cuda|auto -----------------------===//

#include "runtime/Device/DeviceSelection.h"

#include "runtime/Device/CudaDriver.h"
#include "runtime/Device/KernelImages.h"

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

/// Why the CUDA executor cannot run `plan` here; never empty today.
std::string whyNotCuda(const plan::Plan *plan) {
  Expected<CudaDriverInfo> driver = probeCudaDriver();
  if (!driver)
    return driver.status().message();
  const CudaDeviceInfo &d = driver->devices.front();
  std::string gpu = "device 0 (" + d.name + ", sm_" + std::to_string(d.major) +
                    std::to_string(d.minor) + ", driver " +
                    std::to_string(driver->driverVersion) + ")";
  const char *notBuilt = "the CUDA executor that launches them is not "
                         "built yet";
  if (!plan)
    return gpu + " is there, but the CUDA executor is not built yet";
  Expected<std::vector<KernelImage>> images =
      selectKernelImages(*plan, d.major, d.minor);
  if (!images)
    return gpu + ": " + images.status().message();
  size_t cubins = 0;
  for (const KernelImage &i : *images)
    cubins += i.format == KernelImage::Format::Cubin;
  return gpu + " has the plan's " + std::to_string(images->size()) +
         " CUDA kernels (" + std::to_string(cubins) + " as cubins, " +
         std::to_string(images->size() - cubins) + " as PTX to JIT), but " +
         notBuilt;
}

} // namespace

Expected<DeviceChoice> selectDevice(DeviceKind requested,
                                    const plan::Plan *plan) {
  DeviceChoice choice;
  if (requested == DeviceKind::Cpu)
    return choice;
  std::string why = whyNotCuda(plan);
  if (requested == DeviceKind::Cuda)
    return Status::invalidArgument("--device cuda: " + why +
                                   "; run with --device cpu (or auto)");
  choice.notice = "--device auto: running on the CPU (" + why + ")";
  return choice;
}

} // namespace folio::device
