//===- Avx512Math.h - Vector math for the AVX-512 kernels -------*- C++ -*-===//
//
// Internal header: include only from translation units whose AVX-512 code is
// entered after a runtime check. Every function carries the target
// attribute itself, so the including file is compiled for baseline x86-64
// and no AVX-512 instruction leaks into shared inline functions.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_AVX512MATH_H
#define FOLIO_CODEGEN_CPU_AVX512MATH_H

#include <cstdint>
#include <cstring>
#include <immintrin.h>

#define FOLIO_AVX512                                                           \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
/// The same with AVX512-VNNI (vpdpbusd, vpdpwssd), for the integer kernels.
#define FOLIO_AVX512_VNNI                                                      \
  __attribute__((                                                              \
      target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))

namespace folio::cpu::avx512 {

/// Mask of the first `n` (< 16) lanes.
FOLIO_AVX512 static inline __mmask16 tailMask(int64_t n) {
  return __mmask16((1u << n) - 1u);
}

/// The 4 bytes at p, broadcast to every 32-bit lane: an x dword the integer
/// GEMMs multiply with a panel's columns.
FOLIO_AVX512 static inline __m512i broadcastDword(const void *p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

/// acc + the pairwise int16 products of a and b (vpdpwssd), and acc + the
/// products of a's unsigned and b's signed bytes, four per lane (vpdpbusd).
/// Inline assembly instead of the intrinsics: in a loop over an array of
/// accumulators GCC 12 moves every accumulator through another register
/// (and spills some) around each intrinsic, where the tied operand keeps
/// it in place. The int8 GEMM with 6 x rows (folio-linear-bench's kernel
/// alone, 2048 x 768, M = 512, Intel Xeon, 1 thread) ran 243-268 GFLOP/s
/// with the intrinsic and 294-314 with this.
FOLIO_AVX512_VNNI static inline __m512i dpwssd(__m512i acc, __m512i a,
                                               __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}
FOLIO_AVX512_VNNI static inline __m512i dpbusd(__m512i acc, __m512i a,
                                               __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

/// acc + the pairwise products of a's and b's int16 lanes: vpdpwssd, or
/// vpmaddwd and vpaddd without VNNI (the same exact sums: a pair's two
/// products of an int8 code and an int16 x code are below 2^23).
template <bool Vnni>
FOLIO_AVX512_VNNI static inline __m512i dotPairs(__m512i acc, __m512i a,
                                                 __m512i b) {
  if constexpr (Vnni)
    return dpwssd(acc, a, b);
  else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}

/// Transposes the 4 x 4 bytes of every 128-bit lane: byte 4i + j of a lane
/// goes to 4j + i (the int4 int8-x kernels' grouping of chunk bytes).
FOLIO_AVX512 static inline __m512i transposeBytes4x4(__m512i v) {
  const __m512i ctrl = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(v, ctrl);
}

/// e^x with about 2 ulp error; underflows to 0 below -104, inf above 89;
/// NaN stays NaN.
FOLIO_AVX512 static inline __m512 exp(__m512 x) {
  // The bound first: maxps/minps return their second operand when either
  // is NaN, so a NaN x passes through (with x first it became the bound,
  // e^-104 = 0, and a NaN score turned into a weight of 0).
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n*ln2 in two steps (Cody-Waite) to keep r exact.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

/// tanh(x), accurate to a few 1e-7 absolute; odd-symmetric.
FOLIO_AVX512 static inline __m512 tanh(__m512 x) {
  __m512 ax = _mm512_abs_ps(x);
  __m512 t = exp(_mm512_mul_ps(ax, _mm512_set1_ps(-2.0f)));
  __m512 big = _mm512_div_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), t),
                             _mm512_add_ps(_mm512_set1_ps(1.0f), t));
  // Near zero 1 - t cancels; the Taylor series is exact to f32 there.
  __m512 x2 = _mm512_mul_ps(ax, ax);
  __m512 small =
      _mm512_fnmadd_ps(_mm512_mul_ps(x2, _mm512_set1_ps(1.0f / 3.0f)), ax, ax);
  __mmask16 isSmall = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(4e-3f), _CMP_LT_OQ);
  __m512 r = _mm512_mask_blend_ps(isSmall, big, small);
  // Copy the sign of x.
  __m512i sign = _mm512_and_si512(_mm512_castps_si512(x),
                                  _mm512_set1_epi32(int(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
}

/// erf(x) by Abramowitz-Stegun 7.1.26 (absolute error below 1.5e-7).
FOLIO_AVX512 static inline __m512 erf(__m512 x) {
  __m512 ax = _mm512_abs_ps(x);
  __m512 t = _mm512_div_ps(
      _mm512_set1_ps(1.0f),
      _mm512_fmadd_ps(ax, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  __m512 e = exp(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(ax, ax)));
  __m512 r = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0f));
  __m512i sign = _mm512_and_si512(_mm512_castps_si512(x),
                                  _mm512_set1_epi32(int(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
}

/// 16 bf16 values to f32 (exact: a shift).
FOLIO_AVX512 static inline __m512 loadBf16(const uint16_t *p) {
  __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

FOLIO_AVX512 static inline __m512 loadBf16(const uint16_t *p, __mmask16 m) {
  __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/// 16 f16 values to f32 (exact).
FOLIO_AVX512 static inline __m512 loadF16(const uint16_t *p) {
  return _mm512_cvtph_ps(
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
}

FOLIO_AVX512 static inline __m512 loadF16(const uint16_t *p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

/// f32 to bf16 with round-to-nearest-even, NaN kept quiet; bit-exact with
/// floatToBf16 in DType.h.
FOLIO_AVX512 static inline __m256i toBf16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i lsb =
      _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i rounded =
      _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  __m512i quiet = _mm512_or_si512(u, _mm512_set1_epi32(0x400000));
  rounded = _mm512_mask_mov_epi32(rounded, nan, quiet);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
}

/// f32 to f16 with round-to-nearest-even (the hardware conversion).
FOLIO_AVX512 static inline __m256i toF16(__m512 v) {
  return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/// 32 fp8_e4m3 codes (zero past the mask) as f32 values of code x 2^-8,
/// exactly: each code moved into the high byte of a 16-bit lane and
/// arithmetically right by one (bit 14 then cleared) is an f16 with that
/// value, subnormals included (GemvFp8Avx512.cpp). NaN codes are not
/// handled: the weight packer never writes them.
FOLIO_AVX512 static inline void e4m3Codes32(const uint8_t *p, __mmask32 msk,
                                            __m512 &lo, __m512 &hi) {
  __m512i c = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(msk, p));
  __m512i h = _mm512_and_si512(_mm512_srai_epi16(_mm512_slli_epi16(c, 8), 1),
                               _mm512_set1_epi16(int16_t(0xbfff)));
  lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
  hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}

/// x[i][j] becomes x[j][i]: 64 in-register shuffles instead of 256
/// scalar stores.
FOLIO_AVX512 static inline void transpose16(__m512 x[16]) {
  // Pairs of rows interleaved within each 128-bit lane.
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(x[i], x[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(x[i], x[i + 1]);
  }
  // u[4g + c], lane L: rows 4g .. 4g+3 of column 4L + c.
  __m512 u[16];
  for (int g = 0; g < 4; ++g) {
    __m512 *tg = t + 4 * g;
    u[4 * g + 0] = _mm512_shuffle_ps(tg[0], tg[2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(tg[0], tg[2], 0xee);
    u[4 * g + 2] = _mm512_shuffle_ps(tg[1], tg[3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(tg[1], tg[3], 0xee);
  }
  // Column 4L + c gathers lane L of u[c], u[4 + c], u[8 + c], u[12 + c].
  for (int c = 0; c < 4; ++c) {
    __m512 lo01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
    __m512 hi01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee);
    __m512 lo23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
    __m512 hi23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
    x[c] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
    x[4 + c] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
    x[8 + c] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
    x[12 + c] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
  }
}

/// The horizontal sums of S <= 16 vectors: out[s] = the sum of v[s]'s
/// lanes, out[S, 16) zero (one whole store: the reads of a partial masked
/// store could not be forwarded from it). One transposing tree shares its
/// shuffles between the vectors (about 2 per vector, against 4 per
/// _mm512_reduce_add_ps, and Intel runs 512-bit shuffles on one port), which is
/// what a GEMV tile's epilogue costs when K is short (a 256-wide model: 16 FMAs
/// per accumulator). Every slot is summed in the same order, ((l0 + l2) + (l1 +
/// l3)) within each 128-bit lane q, then (q0 + q2) + (q1 + q3), so a row's
/// result does not depend on which slot or tile shape it was computed in.
template <int S>
FOLIO_AVX512 static inline void reduceAddMany(const __m512 (&v)[S],
                                              float (&out)[16]) {
  static_assert(S >= 1 && S <= 16, "one tree holds 16 sums");
  constexpr int G = (S + 3) / 4;
  const __m512 zero = _mm512_setzero_ps();
  auto at = [&](int s) FOLIO_AVX512 { return s < S ? v[s] : zero; };
  // u[g], 128-bit lane q: the partial sums of v[4g .. 4g+3] over lane q.
  __m512 u[4];
  for (int g = 0; g < 4; ++g) {
    if (g >= G) {
      u[g] = zero;
      continue;
    }
    __m512 a = at(4 * g), b = at(4 * g + 1);
    __m512 c = at(4 * g + 2), d = at(4 * g + 3);
    __m512 t0 =
        _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    __m512 t1 =
        _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    u[g] = _mm512_add_ps(_mm512_shuffle_ps(t0, t1, 0x44),
                         _mm512_shuffle_ps(t0, t1, 0xee));
  }
  __m512 r;
  if constexpr (G == 1) {
    __m512 h = _mm512_add_ps(u[0], _mm512_shuffle_f32x4(u[0], u[0], 0x4e));
    r = _mm512_add_ps(h, _mm512_shuffle_f32x4(h, h, 0xb1));
  } else {
    __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x44),
                               _mm512_shuffle_f32x4(u[0], u[1], 0xee));
    __m512 s23 = G > 2 ? _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x44),
                                       _mm512_shuffle_f32x4(u[2], u[3], 0xee))
                       : zero;
    r = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88),
                      _mm512_shuffle_f32x4(s01, s23, 0xdd));
  }
  _mm512_storeu_ps(out, r);
}

/// xOut[0, n) . o[0, n) for bf16 `o` (an int8 weight's outlier columns).
FOLIO_AVX512 static inline float dotBf16(const uint16_t *o, const float *x,
                                         int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 msk = n - j >= 16 ? __mmask16(0xffff) : tailMask(n - j);
    acc = _mm512_fmadd_ps(loadBf16(o + j, msk),
                          _mm512_maskz_loadu_ps(msk, x + j), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

} // namespace folio::cpu::avx512

#endif // FOLIO_CODEGEN_CPU_AVX512MATH_H
