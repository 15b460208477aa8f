//===- VerifyDeviceKernels.cpp - Checks of a plan's GPU kernels -----------===//

#include "runtime/Plan/VerifyDeviceKernels.h"

#include "runtime/Plan/PlanIO.h"

#include <algorithm>
#include <set>

namespace folio::plan {

const std::vector<std::string> &deviceKernelArchs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89",
                                                 "sm_90a"};
  return archs;
}

namespace {

std::string archList() {
  std::string s;
  for (const std::string &a : deviceKernelArchs())
    s += (s.empty() ? "" : ", ") + a;
  return s;
}

Status checkRange(const Plan &plan, const std::string &where, const char *what,
                  uint64_t offset, uint64_t bytes, uint64_t hash) {
  uint64_t size = plan.blob.size();
  if (bytes == 0 || offset > size || bytes > size - offset)
    return Status::invalidArgument(
        where + ": its " + what + " (" + std::to_string(bytes) +
        " bytes at blob offset " + std::to_string(offset) +
        ") is empty or lies outside the blob of " + std::to_string(size) +
        " bytes");
  if (offset % kBlobAlignment != 0)
    return Status::invalidArgument(
        where + ": its " + what + " is at blob offset " +
        std::to_string(offset) + ", not a multiple of " +
        std::to_string(kBlobAlignment));
  if (planHash(plan.blob.data() + offset, bytes) != hash)
    return Status::invalidArgument(where + ": its " + what +
                                   " fails its checksum; the file is corrupt "
                                   "(re-copy or recompile it)");
  return Status::ok();
}

} // namespace

Status validateDeviceKernels(const Plan &plan) {
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < plan.deviceKernels.size(); ++i) {
    const DeviceKernel &k = plan.deviceKernels[i];
    std::string where = "plan: device kernel " + std::to_string(i) + " ('" +
                        k.name + "' for '" + k.arch + "')";
    if (k.name.empty() || k.key.empty())
      return Status::invalidArgument(where + " has no name or no cache key");
    const std::vector<std::string> &archs = deviceKernelArchs();
    if (std::find(archs.begin(), archs.end(), k.arch) == archs.end())
      return Status::invalidArgument(where +
                                     " names an unknown arch; "
                                     "supported: " +
                                     archList());
    if (!seen.insert({k.name, k.arch}).second)
      return Status::invalidArgument(where + " is listed twice");
    if (k.steps.empty())
      return Status::invalidArgument(where + " runs no step");
    for (size_t s = 0; s < k.steps.size(); ++s) {
      int32_t id = k.steps[s];
      if (id < 0 || size_t(id) >= plan.steps.size() ||
          (s > 0 && id <= k.steps[s - 1]))
        return Status::invalidArgument(
            where + " names step " + std::to_string(id) + "; steps must be " +
            "forward steps (0 to " + std::to_string(plan.steps.size()) +
            " exclusive) in increasing order");
    }
    if (Status st = checkRange(plan, where, "cubin", k.cubinOffset,
                               k.cubinBytes, k.cubinHash);
        !st)
      return st;
    if (Status st =
            checkRange(plan, where, "PTX", k.ptxOffset, k.ptxBytes, k.ptxHash);
        !st)
      return st;
    for (int32_t f : {k.registers, k.spillStoreBytes, k.spillLoadBytes,
                      k.stackFrameBytes, k.sharedBytes})
      if (f < -1)
        return Status::invalidArgument(where +
                                       " has a negative resource figure; "
                                       "figures are counts or -1 (unknown)");
  }
  return Status::ok();
}

} // namespace folio::plan
