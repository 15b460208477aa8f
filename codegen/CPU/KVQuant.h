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
// int2 (KIVI) uses the same params rules with qmax 3 and packs element
// 4i + j in bits 2j..2j+1 of byte i. Values are rows like int4's
// (quantizeKvRow / dequantizeKvRow with DType::I2 and a group); keys are
// quantized per channel over the rows of a block (kiviQuantizeKeys): one
// {scale, min} pair per channel of one head.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_KVQUANT_H
#define FOLIO_CODEGEN_CPU_KVQUANT_H

#include "codegen/CPU/DType.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace folio::cpu {

/// Largest code of an int8 / int4 cache element (0 for other types).
inline unsigned kvQuantMax(DType t) {
  return t == DType::I8   ? 255u
         : t == DType::I4 ? 15u
         : t == DType::I2 ? 3u
                          : 0u;
}

/// Bytes of one kv head's row of headDim elements in a data pool.
inline size_t kvRowBytes(DType t, int64_t headDim) {
  return size_t(headDim) * dtypeBits(t) / 8;
}

/// uint16 params of one kv head's row: a {scale, min} pair per group; 0
/// for types without params. For int2 this is a value row's (keys have
/// per-block params, kiviQuantizeKeys).
inline int64_t kvRowParams(DType t, int64_t headDim, int64_t group) {
  return (hasGroupParams(t) || isKivi(t)) && group > 0 ? 2 * (headDim / group)
                                                       : 0;
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

/// int2 keys of one kv head over n rows (rows[r * headDim + c]): per
/// channel c, the params of {rows[r][c] : r < n} as for a group (qmax 3;
/// NaN params and zero codes for a channel holding a NaN or an inf) to
/// params[2c] (scale), params[2c + 1] (min), and row r's codes to
/// codes + r * headDim / 4 (headDim % 4 == 0).
void kiviQuantizeKeys(const float *rows, int64_t n, int64_t headDim,
                      uint8_t *codes, uint16_t *params);

/// One key row of codes (headDim / 4 bytes) with its block's per-channel
/// params: out[c] = min[c] + q[c] * scale[c].
void kiviDequantizeKey(const uint8_t *code, const uint16_t *params,
                       int64_t headDim, float *out);

namespace detail {

/// The f16 {scale, min} of an int8 / int4 group whose values lie in
/// [lo, hi] (finite, lo <= hi) with codes up to qmax, as the header
/// comment defines them. Shared by every quantizer so they agree bit for
/// bit.
void kvGroupParams(float lo, float hi, unsigned qmax, uint16_t &scaleH,
                   uint16_t &minH);

/// The f16 params of a group holding a NaN or an inf.
constexpr uint16_t kKvNanParam = 0x7e00;

/// The code of a finite value x in a group with params (scale > 0, mn) as
/// f32: (x - mn) / scale rounded to nearest even, clamped to [0, qmax].
/// Vector quantizers compute the same operations lane by lane.
inline unsigned kvCode(float x, float mn, float scale, unsigned qmax) {
  float t = std::nearbyint((x - mn) / scale);
  t = t > 0.0f ? t : 0.0f;
  t = t < float(qmax) ? t : float(qmax);
  return unsigned(t);
}

} // namespace detail

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_KVQUANT_H
