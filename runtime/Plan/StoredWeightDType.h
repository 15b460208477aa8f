//===- StoredWeightDType.h - A stored weight's kernel dtype -----*- C++ -*-===//
//
// The one mapping from a plan's StoredWeight element type to the dtype the
// CPU and generated CUDA kernels name it by (codegen/CPU/DType.h, header
// only): the CPU executor's weight views and the CUDA launch derivation
// both read it, so a new stored dtype is added in one place.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_STOREDWEIGHTDTYPE_H
#define FOLIO_RUNTIME_PLAN_STOREDWEIGHTDTYPE_H

#include "codegen/CPU/DType.h"
#include "runtime/Plan/Plan.h"

namespace folio::plan {

/// `w`'s dtype as the kernels name it, and int4's group along K (0 for
/// the other dtypes); false for an element type no kernel stores weights
/// in.
inline bool storedWeightDType(const StoredWeight &w, cpu::DType &type,
                              int64_t &groupSize) {
  groupSize = 0;
  switch (w.type) {
  case ElemType::F32:
    type = cpu::DType::F32;
    return true;
  case ElemType::BF16:
    type = cpu::DType::BF16;
    return true;
  case ElemType::F16:
    type = cpu::DType::F16;
    return true;
  case ElemType::I8:
    type = cpu::DType::I8;
    return true;
  case ElemType::F8E4M3:
    type = cpu::DType::FP8E4M3;
    return true;
  case ElemType::I4:
    type = cpu::DType::I4;
    groupSize = int4LayoutGroupSize(w.layout);
    return true;
  default:
    return false;
  }
}

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_STOREDWEIGHTDTYPE_H
