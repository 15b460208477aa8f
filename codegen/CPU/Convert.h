//===- Convert.h - Row conversions between f32 and storage types -*- C++
//-*-===//
//
// Internal. Bit-exact with the scalar definitions in DType.h on every path,
// so a cache written on one machine reads the same on another.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_CONVERT_H
#define FOLIO_CODEGEN_CPU_CONVERT_H

#include "codegen/CPU/DType.h"

#include <cstdint>

namespace folio::cpu::detail {

/// dst[i] = src[i] stored as type t: f32, bf16 or f16 only (quantized
/// cache rows go through KVRowLoad.h).
void storeRow(const float *src, void *dst, DType t, int64_t n);

/// dst[i] = f32 value of src[i] of type t.
void loadRow(const void *src, DType t, float *dst, int64_t n);

void storeRowAvx512(const float *src, void *dst, DType t, int64_t n);
void loadRowAvx512(const void *src, DType t, float *dst, int64_t n);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_CONVERT_H
