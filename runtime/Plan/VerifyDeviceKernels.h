//===- VerifyDeviceKernels.h - Checks of a plan's GPU kernels ---*- C++ -*-===//

#ifndef FOLIO_RUNTIME_PLAN_VERIFYDEVICEKERNELS_H
#define FOLIO_RUNTIME_PLAN_VERIFYDEVICEKERNELS_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

namespace folio::plan {

/// The archs a plan's device kernels may be compiled for.
const std::vector<std::string> &deviceKernelArchs();

/// Checks every DeviceKernel: a name and key, an arch of
/// deviceKernelArchs(), forward steps that exist and increase, one
/// (name, arch) record at most, a non-empty cubin
/// and PTX each 64-byte aligned inside the blob and matching its checksum,
/// and resource figures of -1 or more.
Status validateDeviceKernels(const Plan &plan);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_VERIFYDEVICEKERNELS_H
