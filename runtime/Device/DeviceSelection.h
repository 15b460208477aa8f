//===- DeviceSelection.h - --device cpu|cuda|auto ---------------*- C++ -*-===//
//
// Which executor a tool runs a plan on. `cpu` is the CPU executor. `cuda`
// and `auto` run the CUDA executor on device 0 when the driver, a device,
// the plan's kernels for that device and a generated kernel for every part
// of the plan are there. Without a driver or a device both run on the CPU
// with a one-line notice of why, so one binary serves GPU and CPU
// machines. With a GPU that cannot run the plan, `cuda` is an error naming
// what is missing (never a silent CPU run) and `auto` takes the CPU with
// the notice.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_DEVICESELECTION_H
#define FOLIO_RUNTIME_DEVICE_DEVICESELECTION_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <optional>
#include <string>

namespace folio::device {

enum class DeviceKind { Cpu, Cuda, Auto };

/// "cpu", "cuda" or "auto"; nullopt for anything else.
std::optional<DeviceKind> parseDeviceKind(const std::string &s);
const char *deviceKindName(DeviceKind k);

struct DeviceChoice {
  DeviceKind device = DeviceKind::Cpu; ///< what runs: Cpu or Cuda
  /// One line saying where it runs and, on the CPU, why ("" for `cpu`).
  std::string notice;
};

/// Resolves `requested` for `plan` (see the file comment). A null `plan`
/// is a tool that runs only on the CPU executor (folio-bench): with a GPU
/// there, `cuda` is an error saying so. Errors start with "--device cuda: ".
Expected<DeviceChoice> selectDevice(DeviceKind requested,
                                    const plan::Plan *plan);

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_DEVICESELECTION_H
