//===- PlanIO.h - Reading and writing .folio artifacts ----------*- C++ -*-===//
//
// Layout (little-endian):
//   0   "FOLIOPLN"            magic
//   8   u32 version           kPlanVersion
//   12  u32 0                 reserved
//   16  u64 headerOffset      (40)
//   24  u64 headerBytes
//   32  u64 blobOffset        a multiple of 64; the blob runs to end of file
//   40  header                tagged binary records (PlanIO.cpp), see
//                             docs/plan-and-executor.md
//   blobOffset: blob          weights and large constants, each 64-aligned
// Loading maps the file and points the plan's blob into the mapping, so
// weights are never copied (executors may still pack them).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_PLANIO_H
#define FOLIO_RUNTIME_PLAN_PLANIO_H

#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

#include <string>

namespace folio::plan {

inline constexpr uint32_t kPlanVersion = 3;
inline constexpr char kPlanMagic[9] = "FOLIOPLN";

/// Writes `plan` to `path` (atomically: a temporary file renamed into place).
Status writePlan(const Plan &plan, const std::string &path);

/// Serialises to memory (the same bytes writePlan stores).
std::string serializePlan(const Plan &plan);

/// Maps and parses `path`; every offset, id and size is checked.
Expected<Plan> readPlan(const std::string &path);

/// Parses an in-memory artifact, copying the blob (tests, embedded plans).
Expected<Plan> parsePlan(const std::string &bytes);

/// Checks ids, constant ranges, op and kernel kinds, KV-cache dtypes with
/// their scale layouts (and the static scales their steps take), and that
/// the kernels cover the steps in order, against the value table.
Status validatePlan(const Plan &plan);

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_PLANIO_H
