//===- ConvertAvx2.cpp - Row conversions with AVX2 and F16C ---------------===//
//
// bf16 and f16 rows to and from f32, eight values a pass, bit for bit the
// scalar definitions in DType.h (as the AVX-512 bodies are): bf16 rounds to
// nearest even with an integer add and keeps NaN quiet, f16 is F16C's
// round-to-nearest conversion, whose NaN (quiet bit set, payload's top
// bits kept) and overflow (inf) are floatToF16's. The last n % 8 values
// take the scalar definitions.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/Convert.h"

namespace folio::cpu::detail {

namespace {

/// Eight f32 as bf16, rounded to nearest even; NaN stays a quiet NaN.
FOLIO_AVX2 inline __m128i toBf16(__m256 v) {
  __m256i u = _mm256_castps_si256(v);
  __m256i lsb =
      _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i rounded =
      _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
  rounded = _mm256_blendv_epi8(rounded, quiet, nan);
  __m256i high = _mm256_srli_epi32(rounded, 16); // < 2^16: packs exactly
  return _mm_packus_epi32(_mm256_castsi256_si128(high),
                          _mm256_extracti128_si256(high, 1));
}

} // namespace

FOLIO_AVX2 void storeRowAvx2(const float *src, void *dst, DType t, int64_t n) {
  if (t != DType::BF16 && t != DType::F16)
    rowTypeMisuse("storeRowAvx2", "bf16 and f16", t);
  uint16_t *d = static_cast<uint16_t *>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    __m128i h =
        t == DType::BF16
            ? toBf16(v)
            : _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(d + i), h);
  }
  for (; i < n; ++i)
    d[i] = t == DType::BF16 ? floatToBf16(src[i]) : floatToF16(src[i]);
}

FOLIO_AVX2 void loadRowAvx2(const void *src, DType t, float *dst, int64_t n) {
  if (t != DType::BF16 && t != DType::F16)
    rowTypeMisuse("loadRowAvx2", "bf16 and f16", t);
  const uint16_t *s = static_cast<const uint16_t *>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
    __m256 v = t == DType::BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(
                                      _mm256_cvtepu16_epi32(h), 16))
                                : _mm256_cvtph_ps(h);
    _mm256_storeu_ps(dst + i, v);
  }
  for (; i < n; ++i)
    dst[i] = t == DType::BF16 ? bf16ToFloat(s[i]) : f16ToFloat(s[i]);
}

} // namespace folio::cpu::detail
