//===- KernelDType.h - Plan element types as the kernels name them -*- C++
//-*-===//
//
// The one mapping from a plan's ElemType to the dtype the CPU and generated
// CUDA kernels name it by (codegen/CPU/DType.h, header only). The CPU
// executor's float steps and weight views and the CUDA launch derivation
// (weights and caches) all read it, so a new element type is added in one
// place; each caller keeps its own rule for which dtypes it takes.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_PLAN_KERNELDTYPE_H
#define FOLIO_RUNTIME_PLAN_KERNELDTYPE_H

#include "codegen/CPU/DType.h"
#include "runtime/Plan/Plan.h"

namespace folio::plan {

/// `t` as the kernels name it; false for the integer tensor types (i32,
/// i64), which no kernel dtype stands for.
inline bool kernelDType(ElemType t, cpu::DType &out) {
  switch (t) {
  case ElemType::F32:
    out = cpu::DType::F32;
    return true;
  case ElemType::BF16:
    out = cpu::DType::BF16;
    return true;
  case ElemType::F16:
    out = cpu::DType::F16;
    return true;
  case ElemType::F8E4M3:
    out = cpu::DType::FP8E4M3;
    return true;
  case ElemType::F8E5M2:
    out = cpu::DType::FP8E5M2;
    return true;
  case ElemType::I8:
    out = cpu::DType::I8;
    return true;
  case ElemType::I4:
    out = cpu::DType::I4;
    return true;
  case ElemType::I2:
    out = cpu::DType::I2;
    return true;
  case ElemType::I32:
  case ElemType::I64:
    return false;
  }
  return false;
}

/// `w`'s dtype as the kernels name it, and int4's group along K (0 for
/// the other dtypes); false for an element type no kernel stores weights
/// in (fp8_e5m2, int2, the integer tensor types).
inline bool storedWeightDType(const StoredWeight &w, cpu::DType &type,
                              int64_t &groupSize) {
  groupSize = 0;
  if (w.type == ElemType::F8E5M2 || w.type == ElemType::I2 ||
      !kernelDType(w.type, type))
    return false;
  if (w.type == ElemType::I4)
    groupSize = int4LayoutGroupSize(w.layout);
  return true;
}

} // namespace folio::plan

#endif // FOLIO_RUNTIME_PLAN_KERNELDTYPE_H
