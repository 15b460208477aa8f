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
/// cache rows go through KVRowLoad.h). Any other type is a caller bug and
/// aborts with a message, in release builds too.
void storeRow(const float *src, void *dst, DType t, int64_t n);

/// dst[i] = f32 value of src[i] of type t: f32, bf16 or f16 only, like
/// storeRow (aborts on any other type).
void loadRow(const void *src, DType t, float *dst, int64_t n);

/// The AVX-512 bodies for bf16 and f16 (any other type aborts like
/// storeRow; f32 is a copy the callers do themselves).
void storeRowAvx512(const float *src, void *dst, DType t, int64_t n);
void loadRowAvx512(const void *src, DType t, float *dst, int64_t n);
/// The AVX2 + F16C bodies, likewise.
void storeRowAvx2(const float *src, void *dst, DType t, int64_t n);
void loadRowAvx2(const void *src, DType t, float *dst, int64_t n);

/// What a row conversion given a type it does not take does: prints
/// "folio: <fn> takes <takes> only, got <type> ..." and aborts. A caller
/// bug (every caller checks the type first), so it stops in every build
/// rather than write nothing or read NaNs.
[[noreturn]] void rowTypeMisuse(const char *fn, const char *takes, DType t);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_CONVERT_H
