//===- Fp8Avx512.h - fp8 codes to f32 in AVX-512 registers ------*- C++ -*-===//
//
// Internal header, for translation units whose AVX-512 code runs after a
// runtime check (every function carries the target attribute). Shared by
// the KV row loader and the attention tile, which reads fp8 cache rows in
// registers.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_FP8AVX512_H
#define FOLIO_CODEGEN_CPU_FP8AVX512_H

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/DType.h"

namespace folio::cpu::detail {

/// 16 fp8 codes (n <= 16 of them) as f32 code values, NaN codes as the
/// quiet NaN of their sign (as the scalar conversions give them).
template <DType T>
FOLIO_AVX512 static inline __m512 fp8x16(const uint8_t *p, __mmask16 m) {
  __m256i w = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, p));
  __m256i sign =
      _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8);
  __m256i mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7f));
  __m256i nanH = _mm256_or_si256(sign, _mm256_set1_epi16(0x7e00));
  if constexpr (T == DType::FP8E4M3) {
    __m256i h = _mm256_or_si256(sign, _mm256_slli_epi16(mag, 7));
    __mmask16 nan = _mm256_cmpeq_epi16_mask(mag, _mm256_set1_epi16(0x7f));
    h = _mm256_mask_mov_epi16(h, nan, nanH);
    // Exact: a power-of-two scaling of a value well inside f32's range.
    return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
  } else {
    __m256i h = _mm256_slli_epi16(w, 8);
    __mmask16 nan = _mm256_cmpgt_epi16_mask(mag, _mm256_set1_epi16(0x7c));
    return _mm512_cvtph_ps(_mm256_mask_mov_epi16(h, nan, nanH));
  }
}

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_FP8AVX512_H
