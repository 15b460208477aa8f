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

/// Storage type of a weight or a cache. Quantized cache types (int8, fp8)
/// extend this enum in a later issue.
enum class DType : uint8_t { F32, BF16, F16 };

inline size_t dtypeSize(DType t) { return t == DType::F32 ? 4 : 2; }

inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
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

/// Loads element `i` of a buffer of type `t` as f32.
inline float loadAsFloat(const void *p, DType t, size_t i) {
  switch (t) {
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  }
  return 0.0f;
}

/// Stores f32 `v` as element `i` of a buffer of type `t`.
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
  }
}

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_DTYPE_H
