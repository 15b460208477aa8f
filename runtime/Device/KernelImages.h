//===- KernelImages.h - A plan's kernel images for one GPU ------*- C++ -*-===//
//
// A plan compiled ahead of time carries each CUDA kernel as a cubin and as
// PTX for one or more archs. A device runs a cubin built for its own major
// version at a minor version at most its own (an sm_80 cubin runs on
// sm_86), an arch-specific one (sm_90a) only on exactly that arch; PTX is
// JIT-compiled by the driver for any device at least as new as its arch
// (again exactly, for arch-specific PTX). A cubin is preferred: no JIT.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_KERNELIMAGES_H
#define FOLIO_RUNTIME_DEVICE_KERNELIMAGES_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>
#include <vector>

namespace folio::device {

struct KernelImage {
  enum class Format { Cubin, Ptx };
  const plan::DeviceKernel *kernel = nullptr; ///< the record the bytes are in
  Format format = Format::Cubin;
};

/// One image per distinct kernel name of `plan` for a device of compute
/// capability major.minor. An error names the first kernel with no usable
/// image and the archs the plan holds, or says that the plan has no CUDA
/// kernels at all (compiled for the CPU).
Expected<std::vector<KernelImage>> selectKernelImages(const plan::Plan &plan,
                                                      int major, int minor);

/// A listing of the plan's kernels (how many, by kind) and of each device
/// kernel: name, arch, the steps it runs, cubin and PTX sizes, registers,
/// spills, stack frame and static shared memory. For folio-run
/// --print-kernels.
std::string describeKernels(const plan::Plan &plan);

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_KERNELIMAGES_H
