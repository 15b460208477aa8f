//===- StoredWeightView.h - A stored weight as the kernels read it -*- C++
//-*-===//
//
// The one mapping from a plan's StoredWeight record to the WeightView the
// CPU kernels take: pointers into the plan's blob, nothing converted or
// copied. The step kernels bind their weights through it, and tests that
// read a compiled plan's weights use it too.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_STOREDWEIGHTVIEW_H
#define FOLIO_RUNTIME_EXECUTOR_STOREDWEIGHTVIEW_H

#include "codegen/CPU/WeightPack.h"
#include "runtime/Plan/Plan.h"
#include "runtime/Support/Status.h"

namespace folio::exec {

/// A view of `w`'s bytes in `plan`'s blob (validated with the plan:
/// validateStoredWeights). A dtype the CPU kernels do not read is an error
/// naming it.
Status storedWeightView(const plan::Plan &plan, const plan::StoredWeight &w,
                        cpu::WeightView &v);

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_STOREDWEIGHTVIEW_H
