//===- RotaryStep.h - A rotary step's frequencies ---------------*- C++ -*-===//
//
// The attributes of a plan's `rotary` step (rotary_dim, base, style,
// scaling) as the CPU kernels' RotaryParams: one reading for every
// executor, so the CPU's rotation and the cos/sin table a GPU kernel reads
// come from the same numbers.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_ROTARYSTEP_H
#define FOLIO_RUNTIME_EXECUTOR_ROTARYSTEP_H

#include "codegen/CPU/Rotary.h"
#include "runtime/Plan/Plan.h"

#include <string>

namespace folio::exec {

/// Reads `step`'s attributes for heads of `headDim` elements into `params`
/// (validated); returns what is wrong, or "" when they are good.
std::string rotaryParamsOf(const plan::Step &step, int64_t headDim,
                           cpu::RotaryParams &params);

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_ROTARYSTEP_H
