//===- PlanMapping.h - Mapped plan files and their SIGBUS guard -*- C++ -*-===//
//
// readPlan maps a .folio file and the executors read weights from the
// mapping during every forward. When the file is truncated in place after
// loading, touching a page past its new end raises SIGBUS, which by default
// kills the process with a bare "Bus error". Every mapped plan is recorded
// here (its address range and path) and the first registration installs a
// SIGBUS handler: a fault inside a recorded range prints
//
//   folio: error: the plan file 'P' changed or was truncated while in use
//   (its weights are mapped); reload it
//
// on stderr and exits with status 1; any other SIGBUS goes to the handler
// that was installed before (or the default action, which ends the process
// with SIGBUS as before).
//
// The registry is a fixed table of kMaxPlanMappings slots updated with
// atomics (no locks, no allocation), so the handler may read it. A mapping
// past the table's capacity is simply not recorded (its faults keep the
// default behaviour); a path longer than kMaxPlanMappingPath bytes is
// shortened in the message.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_PLANMAPPING_H
#define FOLIO_RUNTIME_PLAN_PLANMAPPING_H

#include <cstddef>

namespace folio::plan {

inline constexpr int kMaxPlanMappings = 64;
inline constexpr size_t kMaxPlanMappingPath = 1024;

/// Records [base, base + size) as the mapping of the plan file `path` and
/// installs the SIGBUS handler (once per process). Returns the slot to
/// pass to unregisterPlanMapping, or -1 when the table is full.
int registerPlanMapping(const void *base, size_t size, const char *path);

/// Forgets a slot registerPlanMapping returned; call before munmap. -1 is
/// ignored.
void unregisterPlanMapping(int slot);

/// The path of the recorded plan mapping holding `addr`, or null (the same
/// lookup the handler makes).
const char *planMappingAt(const void *addr);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_PLANMAPPING_H
