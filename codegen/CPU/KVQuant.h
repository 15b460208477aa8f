//===- KVQuant.h - Reference KV-cache row formats ---------------*- C++ -*-===//
//
// The scalar definitions of how one kv head's row of K or V (headDim f32
// values of one token) is stored in a cache of each dtype. kvWrite stores
// exactly what quantizeKvRow produces, and every attention tile reads back
// exactly what dequantizeKvRow produces (bit for bit, on every ISA).
//
//   f32 / bf16 / f16   the values, rounded to nearest even.
//   fp8_e4m3/_e5m2     q = fp8(x / scale), saturating, with a static
//                      per-kv-head scale; x' = fp8value(q) * scale.
//   int8 / int4        asymmetric per group of `group` elements: the f16
//                      pair {scale, min} and codes q in [0, qmax] (qmax 255
//                      or 15) with x' = min + q * scale. int4 packs element
//                      2i in the low nibble of byte i.
//
// int8 / int4 params: minH = f16(min of the group) rounded down, scaleH =
// f16((max - minH) / qmax) rounded up, both clamped to the finite f16 range
// (+-65504); q = clamp(round_half_even((x - minH) / scaleH), 0, qmax) with
// the stored (rounded) values, so |x - x'| <= scaleH / 2 (up to f32
// rounding) for every x the clamped range [minH, minH + qmax * scaleH]
// covers, and values beyond it saturate to its ends. scaleH is 0 only when
// the group is constant and exact in f16 (x' = x) or lies wholly below
// -65504 (x' = -65504). A group holding a NaN or an inf stores NaN for both
// params and zero codes: it dequantizes to NaN, never to a plausible number.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_KVQUANT_H
#define FOLIO_CODEGEN_CPU_KVQUANT_H

#include "codegen/CPU/DType.h"

#include <cstddef>
#include <cstdint>

namespace folio::cpu {

/// Largest code of an int8 / int4 cache element (0 for other types).
inline unsigned kvQuantMax(DType t) {
  return t == DType::I8 ? 255u : t == DType::I4 ? 15u : 0u;
}

/// Bytes of one kv head's row of headDim elements in a data pool.
inline size_t kvRowBytes(DType t, int64_t headDim) {
  return size_t(headDim) * dtypeBits(t) / 8;
}

/// uint16 params of one kv head's row: a {scale, min} pair per group; 0
/// for types without params.
inline int64_t kvRowParams(DType t, int64_t headDim, int64_t group) {
  return hasGroupParams(t) && group > 0 ? 2 * (headDim / group) : 0;
}

/// Stores one head's row x[0, headDim) as `dtype`: kvRowBytes bytes to
/// dataOut and, for int8 / int4, kvRowParams uint16 to paramsOut (scale
/// then min, as f16 bits, per group). `group` (int8 / int4: divides
/// headDim, even for int4) and `staticScale` (fp8: > 0) are ignored by the
/// types that do not use them, as is a null paramsOut.
void quantizeKvRow(const float *x, int64_t headDim, DType dtype, int64_t group,
                   float staticScale, void *dataOut, uint16_t *paramsOut);

/// The f32 values of a row stored by quantizeKvRow.
void dequantizeKvRow(const void *data, const uint16_t *params, int64_t headDim,
                     DType dtype, int64_t group, float staticScale, float *out);

namespace detail {

/// The f16 {scale, min} of an int8 / int4 group whose values lie in
/// [lo, hi] (finite, lo <= hi) with codes up to qmax, as the header
/// comment defines them. Shared by every quantizer so they agree bit for
/// bit.
void kvGroupParams(float lo, float hi, unsigned qmax, uint16_t &scaleH,
                   uint16_t &minH);

/// The f16 params of a group holding a NaN or an inf.
constexpr uint16_t kKvNanParam = 0x7e00;

} // namespace detail

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_KVQUANT_H
