//===- DType.h - Element types of weights and KV caches ---------*- C++ -*-===//
//
// Activations are always f32; weights and caches may be stored narrower.
// The scalar conversions here are the bit-exact definitions that the vector
// paths must reproduce (round-to-nearest-even, NaN stays NaN).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_DTYPE_H
#define FOLIO_CODEGEN_CPU_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace folio::cpu {

/// Storage type of a weight or a cache. Weights (PackedWeight, embedding
/// tables) take only F32, BF16 and F16 and reject the rest; the quantized
/// types are KV-cache formats (KVQuant.h defines them): FP8 with a static
/// per-kv-head scale, I8 (uint8 codes) and I4 (two codes per byte) with an
/// f16 (scale, min) pair per token, head and group; I2 (four codes per
/// byte) is the KIVI cache: keys per channel over a block, values per
/// token and group, the newest blocks resident in f32 (KVCache.h).
enum class DType : uint8_t { F32, BF16, F16, FP8E4M3, FP8E5M2, I8, I4, I2 };

/// Bits one element takes.
inline unsigned dtypeBits(DType t) {
  switch (t) {
  case DType::F32:
    return 32;
  case DType::BF16:
  case DType::F16:
    return 16;
  case DType::FP8E4M3:
  case DType::FP8E5M2:
  case DType::I8:
    return 8;
  case DType::I4:
    return 4;
  case DType::I2:
    return 2;
  }
  return 0;
}

/// Bytes one element takes, for the byte-sized types; 0 for I4 / I2, which
/// have none (caches size rows with KVCacheView::headRowBytes instead).
inline size_t dtypeSize(DType t) {
  unsigned bits = dtypeBits(t);
  return bits % 8 == 0 ? bits / 8 : 0;
}

/// The types weights and activations may be stored in (PackedWeight,
/// embedding tables, the row conversions of Convert.h).
inline bool isPlainFloat(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

inline bool isFp8(DType t) {
  return t == DType::FP8E4M3 || t == DType::FP8E5M2;
}

/// Types whose rows carry (scale, min) params per group, in params pools
/// indexed by slot for both K and V (int8 / int4). I2 is not one of them:
/// its K params are per block (isKivi).
inline bool hasGroupParams(DType t) { return t == DType::I8 || t == DType::I4; }

/// The KIVI 2-bit cache: K params per (block, head, channel), V params per
/// (slot, head, group), resident blocks in f32 residual pools.
inline bool isKivi(DType t) { return t == DType::I2; }

inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::FP8E4M3:
    return "fp8_e4m3";
  case DType::FP8E5M2:
    return "fp8_e5m2";
  case DType::I8:
    return "int8";
  case DType::I4:
    return "int4";
  case DType::I2:
    return "int2";
  }
  return "?";
}

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16ToFloat(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet, never round to inf
    return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

/// IEEE binary16 to binary32, exact (subnormals included).
inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) // inf / NaN
    return bitsToFloat(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return bitsToFloat(sign);
    // Subnormal: value = man * 2^-24, exact in f32.
    float v = float(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((exp + 112) << 23) | (man << 13));
}

/// IEEE binary32 to binary16 with round-to-nearest-even; overflow gives inf.
inline uint16_t floatToF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // rounds to >= 65520: inf
    return uint16_t(sign | 0x7c00u);
  if (a < 0x38800000u) { // below the smallest normal 2^-14: subnormal or zero
    if (a < 0x33000000u) // below half the smallest subnormal: zero
      return sign;
    uint32_t exp = a >> 23;
    uint32_t man = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp; // 14..24
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
  return uint16_t(sign | ((r - 0x38000000u) >> 13));
}

namespace detail {

/// f32 to an 8-bit float with `man` mantissa bits and exponent bias `bias`
/// (IEEE-like: exponent field 0 holds the subnormals), round to nearest
/// even, finite values beyond `maxCode` saturating to it. NaN and inf are
/// the caller's.
inline uint8_t floatToFp8Finite(uint32_t a, unsigned man, int bias,
                                uint32_t maxCode) {
  const int emin = 1 - bias; // exponent of the smallest normal
  int e = int(a >> 23) - 127;
  if (e >= emin) {
    unsigned shift = 23 - man;
    uint32_t r = a + ((1u << (shift - 1)) - 1) + ((a >> shift) & 1u);
    uint32_t code = (r >> shift) - (uint32_t(127 - bias) << man);
    return uint8_t(code > maxCode ? maxCode : code);
  }
  if ((a >> 23) == 0) // zero or an f32 subnormal: far below half a step
    return 0;
  // Subnormal target: the value in units of 2^(emin - man), rounded to
  // nearest even; a carry into 2^man is the smallest normal, as wanted.
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  int shift = 23 - int(man) + emin - e;
  if (shift > 24)
    return 0;
  uint32_t half = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1);
  uint32_t mid = 1u << (shift - 1);
  if (rem > mid || (rem == mid && (half & 1)))
    ++half;
  return uint8_t(half);
}

} // namespace detail

/// f32 to fp8 e4m3fn (OCP: bias 7, no inf, NaN = 0x7f / 0xff, max 448):
/// nearest even, finite values beyond +-448 saturate to +-448, NaN stays
/// NaN and so does +-inf (there is no inf to keep, and a cache must not
/// turn an overflowed activation into a plausible number).
inline uint8_t floatToFp8E4M3(float f) {
  uint32_t u = floatBits(f);
  uint8_t sign = uint8_t((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u)
    return uint8_t(sign | 0x7f);
  return uint8_t(sign | detail::floatToFp8Finite(a, 3, 7, 0x7e));
}

/// Exact (subnormals included); NaN codes give a quiet NaN of their sign.
inline float fp8E4M3ToFloat(uint8_t c) {
  uint32_t sign = uint32_t(c & 0x80u) << 24;
  uint32_t exp = (c >> 3) & 0xfu, man = c & 0x7u;
  if ((c & 0x7f) == 0x7f)
    return bitsToFloat(sign | 0x7fc00000u);
  if (exp == 0) { // man * 2^-9
    float v = float(man) * 0.001953125f;
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((exp + 120) << 23) | (man << 20));
}

/// f32 to fp8 e5m2 (IEEE-like: bias 15, inf 0x7c, NaN above, max 57344):
/// nearest even, finite values beyond +-57344 saturate to +-57344, inf
/// stays inf and NaN stays NaN.
inline uint8_t floatToFp8E5M2(float f) {
  uint32_t u = floatBits(f);
  uint8_t sign = uint8_t((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return uint8_t(sign | 0x7e);
  if (a == 0x7f800000u)
    return uint8_t(sign | 0x7c);
  return uint8_t(sign | detail::floatToFp8Finite(a, 2, 15, 0x7b));
}

/// Exact: an e5m2 code is the high byte of the f16 with the same value.
/// NaN codes give a quiet NaN of their sign.
inline float fp8E5M2ToFloat(uint8_t c) {
  if ((c & 0x7f) > 0x7c)
    return bitsToFloat((uint32_t(c & 0x80u) << 24) | 0x7fc00000u);
  return f16ToFloat(uint16_t(c) << 8);
}

/// Loads element `i` of a buffer of type `t` as f32. fp8 elements are the
/// bare codes (no scale); int8 / int4 need their group's params
/// (dequantizeKvRow in KVQuant.h) and read as NaN here.
inline float loadAsFloat(const void *p, DType t, size_t i) {
  switch (t) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::FP8E4M3:
    return fp8E4M3ToFloat(static_cast<const uint8_t *>(p)[i]);
  case DType::FP8E5M2:
    return fp8E5M2ToFloat(static_cast<const uint8_t *>(p)[i]);
  case DType::I8:
  case DType::I4:
  case DType::I2:
    break;
  }
  return bitsToFloat(0x7fc00000u);
}

/// Stores f32 `v` as element `i` of a buffer of type `t` (fp8: the bare
/// code, saturating). int8 / int4 elements cannot be stored one at a time
/// (quantizeKvRow in KVQuant.h); the buffer is left untouched.
inline void storeFromFloat(void *p, DType t, size_t i, float v) {
  switch (t) {
  case DType::F32:
    static_cast<float *>(p)[i] = v;
    return;
  case DType::BF16:
    static_cast<uint16_t *>(p)[i] = floatToBf16(v);
    return;
  case DType::F16:
    static_cast<uint16_t *>(p)[i] = floatToF16(v);
    return;
  case DType::FP8E4M3:
    static_cast<uint8_t *>(p)[i] = floatToFp8E4M3(v);
    return;
  case DType::FP8E5M2:
    static_cast<uint8_t *>(p)[i] = floatToFp8E5M2(v);
    return;
  case DType::I8:
  case DType::I4:
  case DType::I2:
    return;
  }
}

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_DTYPE_H
