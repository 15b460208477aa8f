//===- DeviceSelection.h - --device cpu|cuda|auto ---------------*- C++ -*-===//
//
// Which executor a tool runs a plan on. `cpu` is the CPU executor. `cuda`
// needs a driver and a device (an error names what is missing) and the
// plan's kernels for that device; the CUDA executor that would launch them
// is not built yet, so even then it is an error saying so, never a silent
// CPU run. `auto` takes the CPU with a one-line notice of why.
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
  DeviceKind device = DeviceKind::Cpu; ///< what runs: Cpu today
  /// For `auto`: one line saying why the CPU runs ("" for `cpu`).
  std::string notice;
};

/// Resolves `requested` for `plan` (see the file comment); with a null
/// `plan` (a tool that loads plans later) the plan's kernels are not
/// looked at. Errors start with "--device cuda: ".
Expected<DeviceChoice> selectDevice(DeviceKind requested,
                                    const plan::Plan *plan);

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_DEVICESELECTION_H
