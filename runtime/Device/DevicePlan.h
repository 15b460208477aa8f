//===- DevicePlan.h - A plan's bytes and kernels on one GPU -----*- C++ -*-===//
//
// What a CUDA executor loads before its first step: the plan's blob in
// device memory (constants, and the weights folioc stored in the layout the
// generated kernels read, so the device reads them where they lie and
// nothing is converted), and every CUDA kernel the plan embeds (folioc
// --target=sm_XX), each from the image KernelImages.h picks for the device:
// its cubin, or its PTX for the driver to JIT-compile.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_DEVICEPLAN_H
#define FOLIO_RUNTIME_DEVICE_DEVICEPLAN_H

#include "runtime/Device/CudaDevice.h"
#include "runtime/Device/KernelImages.h"
#include "runtime/Plan/Plan.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace folio::device {

class DevicePlan {
public:
  /// Uploads the blob and loads every kernel; errors name the kernel (no
  /// image for this device, an image the driver refuses, a missing entry
  /// point) or the allocation. `dev` must outlive the result.
  static Expected<std::unique_ptr<DevicePlan>>
  load(const CudaDevice &dev, std::shared_ptr<const plan::Plan> plan);

  /// The device address of blob offset `offset` (a constant's, a stored
  /// weight's data or scales).
  cu::DevicePtr blobAddress(uint64_t offset) const;
  size_t blobBytes() const { return blob_.bytes(); }

  /// The plan's kernel `name`; an error when the plan has none so named.
  Expected<const CudaKernel *> kernel(const std::string &name) const;
  /// How each kernel was loaded.
  const std::vector<KernelImage> &images() const { return images_; }

private:
  DevicePlan() = default;
  std::shared_ptr<const plan::Plan> plan_;
  DeviceBuffer blob_;
  std::vector<KernelImage> images_;
  std::vector<CudaModule> modules_;
  std::map<std::string, CudaKernel> kernels_;
};

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_DEVICEPLAN_H
