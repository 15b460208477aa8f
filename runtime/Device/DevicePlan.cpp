//===- DevicePlan.cpp - A plan's bytes and kernels on one GPU -------------===//

#include "runtime/Device/DevicePlan.h"

#include "codegen/CUDA/KernelSpec.h"

namespace folio::device {

Expected<std::unique_ptr<DevicePlan>>
DevicePlan::load(const CudaDevice &dev,
                 std::shared_ptr<const plan::Plan> plan) {
  Expected<std::vector<KernelImage>> images =
      selectKernelImages(*plan, dev.major(), dev.minor());
  if (!images)
    return images.status();
  // A kernel generated from other templates than this runtime's may read
  // another argument structure than the one the runtime passes (a field
  // added to LinearArgs shifts every later one): refuse the plan rather
  // than launch it.
  const std::string templates = "templates=" + cuda::templatesHash();
  for (const KernelImage &image : *images) {
    const plan::DeviceKernel &k = *image.kernel;
    size_t at = k.key.rfind("templates=");
    if (at == std::string::npos ||
        k.key.compare(at, std::string::npos, templates) != 0)
      return Status::invalidArgument(
          "kernel " + k.name +
          " was generated from other kernel templates "
          "than this runtime's (its key ends '" +
          (at == std::string::npos ? k.key : k.key.substr(at)) +
          "', this runtime's '" + templates +
          "'): its arguments may differ; recompile the plan with this "
          "folioc (folioc --target=" +
          dev.arch() + ")");
  }
  std::unique_ptr<DevicePlan> p(new DevicePlan());
  p->plan_ = plan;
  p->images_ = std::move(*images);
  // The whole blob in one buffer: weights are nearly all of it, and one
  // copy keeps every offset the plan records valid on the device.
  Expected<DeviceBuffer> blob =
      dev.upload(plan->blob.data(), plan->blob.size(), "the plan's blob");
  if (!blob)
    return blob.status();
  p->blob_ = std::move(*blob);
  for (const KernelImage &image : p->images_) {
    const plan::DeviceKernel &k = *image.kernel;
    bool cubin = image.format == KernelImage::Format::Cubin;
    uint64_t offset = cubin ? k.cubinOffset : k.ptxOffset;
    uint64_t bytes = cubin ? k.cubinBytes : k.ptxBytes;
    if (bytes == 0 || offset + bytes > plan->blob.size())
      return Status::invalidArgument("kernel " + k.name + ": its " +
                                     (cubin ? "cubin" : "PTX") +
                                     " lies outside the plan's blob");
    // The driver reads PTX up to its NUL; folioc stores one.
    if (!cubin && plan->blob.data()[offset + bytes - 1] != 0)
      return Status::invalidArgument("kernel " + k.name +
                                     ": its PTX is not NUL-terminated");
    Expected<CudaModule> m =
        dev.loadModule(plan->blob.data() + offset,
                       "kernel " + k.name + " (" + (cubin ? "cubin" : "PTX") +
                           " for " + k.arch + ")");
    if (!m)
      return m.status();
    Expected<CudaKernel> f = dev.kernel(*m, k.name);
    if (!f)
      return f.status();
    p->kernels_[k.name] = *f;
    p->modules_.push_back(std::move(*m));
  }
  return p;
}

cu::DevicePtr DevicePlan::blobAddress(uint64_t offset) const {
  return blob_.ptr() + offset;
}

Expected<const CudaKernel *> DevicePlan::kernel(const std::string &name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end())
    return Status::notFound("the plan has no CUDA kernel named " + name);
  return &it->second;
}

} // namespace folio::device
