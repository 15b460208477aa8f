//===- KVRowLoadAvx2.cpp - Cache rows with AVX2 ---------------------------===//
//
// The row loads the attention tiles run once per chunk of keys, for the
// cache types an AVX2 host reads most: int8 (the compiler's default cache)
// and bf16 / f16. An int8 group is its codes widened to f32 and one FMA
// with the group's broadcast scale and min: q * scale is exact (8-bit code
// times an f16), so the FMA rounds as the scalar min + q * scale does and
// every row is bit-identical to dequantizeKvRow. The other types take the
// portable loops (KVRowLoad.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/KVRowLoad.h"

#include <cstring>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

/// 8 int8 codes as min + q * scale.
FOLIO_AVX2 inline __m256 int8x8(const uint8_t *b, __m256 scale, __m256 mn) {
  __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(b))));
  return _mm256_fmadd_ps(q, scale, mn);
}

FOLIO_AVX2 void loadInt8(const char *const *rows, const uint16_t *const *params,
                         int64_t n, int64_t hd, int64_t group, float *out) {
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint8_t *b = reinterpret_cast<const uint8_t *>(rows[j]);
    const uint16_t *p = params[j];
    for (int64_t g = 0; g < hd; g += group, p += 2) {
      int32_t pair;
      std::memcpy(&pair, p, 4);
      __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(pair));
      __m256 scale = _mm256_broadcastss_ps(sm);
      __m256 mn = _mm256_broadcastss_ps(_mm_movehdup_ps(sm));
      int64_t i = g;
      for (; i + 8 <= g + group; i += 8)
        _mm256_storeu_ps(out + i, int8x8(b + i, scale, mn));
      // A group that is not a multiple of 8: the rest one by one, the
      // same single rounding.
      float s = _mm_cvtss_f32(sm), m = _mm_cvtss_f32(_mm_movehdup_ps(sm));
      for (; i < g + group; ++i)
        out[i] = __builtin_fmaf(float(b[i]), s, m);
    }
  }
}

/// bf16 / f16 rows: exact widening, 8 at a time.
template <bool Bf16>
FOLIO_AVX2 void loadHalf(const char *const *rows, int64_t n, int64_t hd,
                         float *out) {
  for (int64_t j = 0; j < n; ++j, out += hd) {
    const uint16_t *h = reinterpret_cast<const uint16_t *>(rows[j]);
    int64_t i = 0;
    for (; i + 8 <= hd; i += 8) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i));
      _mm256_storeu_ps(out + i, Bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(
                                           _mm256_cvtepu16_epi32(v), 16))
                                     : _mm256_cvtph_ps(v));
    }
    for (; i < hd; ++i)
      out[i] = Bf16 ? bf16ToFloat(h[i]) : f16ToFloat(h[i]);
  }
}

} // namespace

bool loadKvRowsAvx2(const KvRowFormat &f, const char *const *rows,
                    const uint16_t *const *params, int64_t n, float *out) {
  switch (f.dtype) {
  case DType::I8:
    loadInt8(rows, params, n, f.headDim, f.group, out);
    return true;
  case DType::BF16:
    loadHalf<true>(rows, n, f.headDim, out);
    return true;
  case DType::F16:
    loadHalf<false>(rows, n, f.headDim, out);
    return true;
  default:
    return false;
  }
}

} // namespace folio::cpu::detail
