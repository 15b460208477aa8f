//===- Avx2Math.h - Helpers for the AVX2 kernels ----------------*- C++ -*-===//
//
// Internal header: include only from translation units whose AVX2 code is
// entered after a runtime check (activeIsa() >= Isa::Avx2). Every function
// carries the target attribute itself, so the including file is compiled
// for baseline x86-64 and no AVX2 instruction leaks into shared inline
// functions. AVX2 has no mask registers: partial vectors are loaded with
// vmaskmovps (which never faults on the masked-off lanes) or left to a
// scalar tail.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_AVX2MATH_H
#define FOLIO_CODEGEN_CPU_AVX2MATH_H

#include <cstdint>
#include <immintrin.h>

#define FOLIO_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace folio::cpu::avx2 {

/// acc + the pairwise int16 products of a and b (vpmaddwd, then vpaddd),
/// as inline assembly with its own temporary: with the intrinsics GCC 12
/// issued every product of a tile first and kept accumulators on the
/// stack (the int8 GEMM's loop; seen in the disassembly).
FOLIO_AVX2 static inline __m256i maddAdd(__m256i acc, __m256i a, __m256i b) {
  __m256i t;
  asm("vpmaddwd %3, %2, %1\n\tvpaddd %1, %0, %0"
      : "+x"(acc), "=&x"(t)
      : "x"(a), "x"(b));
  return acc;
}

/// Lane mask of the first `n` (0..8) of eight 32-bit lanes.
FOLIO_AVX2 static inline __m256i tailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// The first `n` (0..8) floats at p, zeros in the other lanes.
FOLIO_AVX2 static inline __m256 loadTail(const float *p, int64_t n) {
  return _mm256_maskload_ps(p, tailMask(n));
}

/// The sum of the eight lanes.
FOLIO_AVX2 static inline float reduceAdd(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// Eight f16 values at p as f32 (exact).
FOLIO_AVX2 static inline __m256 loadF16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

/// e^x with about 2 ulp error (avx512::exp's polynomial); exactly 0 below
/// -87.3 (where 2^n would leave the normal range; -inf gives 0), inf above
/// 88.7, NaN stays NaN.
FOLIO_AVX2 static inline __m256 exp(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3f);
  __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  __m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(88.7f), _CMP_GT_OQ);
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.7f));
  __m256 n =
      _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n*ln2 in two steps (Cody-Waite) to keep r exact.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n for n in [-126, 128]: n = 128 (x near 88.7) as 2 * 2^127.
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i big = _mm256_cmpgt_epi32(ni, _mm256_set1_epi32(127));
  ni = _mm256_sub_epi32(ni, _mm256_and_si256(big, _mm256_set1_epi32(1)));
  __m256 pow2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23));
  p = _mm256_mul_ps(p, pow2);
  p = _mm256_add_ps(p, _mm256_and_ps(_mm256_castsi256_ps(big), p));
  p = _mm256_andnot_ps(under, p);
  p = _mm256_blendv_ps(p, _mm256_set1_ps(__builtin_inff()), over);
  // NaN in, NaN out (the clamps above would turn it into a number).
  return _mm256_blendv_ps(p, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/// tanh(x), accurate to a few 1e-7 absolute; odd-symmetric (avx512::tanh).
FOLIO_AVX2 static inline __m256 tanh(__m256 x) {
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  __m256 ax = _mm256_andnot_ps(signBit, x);
  __m256 t = exp(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  __m256 big = _mm256_div_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), t),
                             _mm256_add_ps(_mm256_set1_ps(1.0f), t));
  // Near zero 1 - t cancels; the Taylor series is exact to f32 there.
  __m256 x2 = _mm256_mul_ps(ax, ax);
  __m256 small =
      _mm256_fnmadd_ps(_mm256_mul_ps(x2, _mm256_set1_ps(1.0f / 3.0f)), ax, ax);
  __m256 r = _mm256_blendv_ps(
      big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(4e-3f), _CMP_LT_OQ));
  return _mm256_or_ps(r, _mm256_and_ps(x, signBit));
}

} // namespace folio::cpu::avx2

#endif // FOLIO_CODEGEN_CPU_AVX2MATH_H
