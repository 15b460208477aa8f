//===- GemvInt8Avx512.cpp - AVX-512 int8-weight kernel --------------------===//
//
// Decode and batches (M <= kInt8GemvMaxRowsAvx512) multiply the int8 codes
// with x in 16-bit fixed point per row (quantizeXInt16*, Gemv.h): int16
// pairs into int32 lanes (vpdpwssd with AVX512-VNNI, else vpmaddwd +
// vpaddd), exact integer sums, and the row's step and scale applied once to
// each sum. The structure is GemvAvx512.cpp's: four weight rows at a time
// (four prefetcher streams), up to four x rows reusing each widened weight
// vector, the next four rows prefetched once per 64-byte line. More rows
// run the int16 GEMM (GemmInt8X16Avx512.cpp), to the same bits.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// quantizeXInt16Scalar's codes and steps, 16 elements at a time: the same
/// IEEE products, and vcvtps2dq rounds to nearest even as nearbyint does
/// (the default MXCSR and floating-point environment).
FOLIO_AVX512 void quantizeRows(const float *x, int64_t m, int64_t k,
                               int16_t *dst, int64_t kPadded, float *steps) {
  const __m512 big = _mm512_set1_ps(FLT_MAX);
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * k;
    int16_t *codes = dst + r * kPadded;
    __m512 amaxV = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int64_t c = 0; c < k; c += 16) {
      __mmask16 msk = k - c >= 16 ? __mmask16(0xffff) : tailMask(k - c);
      __m512 v = _mm512_abs_ps(_mm512_maskz_loadu_ps(msk, row + c));
      bad |= _mm512_cmp_ps_mask(v, big, _CMP_NLE_UQ);
      amaxV = _mm512_max_ps(amaxV, v);
    }
    if (bad) {
      steps[r] = NAN;
      std::fill(codes, codes + kPadded, int16_t(0));
      continue;
    }
    float amax = std::max(_mm512_reduce_max_ps(amaxV), kInt8XAbsMaxFloor);
    const __m512 inv = _mm512_set1_ps(float(kInt8XCodeMax) / amax);
    steps[r] = amax / float(kInt8XCodeMax);
    for (int64_t c = 0; c < kPadded; c += 16) {
      __mmask16 msk = k - c >= 16 ? __mmask16(0xffff)
                      : k > c     ? tailMask(k - c)
                                  : __mmask16(0);
      __m512i q = _mm512_cvtps_epi32(
          _mm512_mul_ps(_mm512_maskz_loadu_ps(msk, row + c), inv));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(codes + c),
                          _mm512_cvtsepi32_epi16(q));
    }
  }
}

/// xOut[m, :] . outliers[n, :] (bf16).
FOLIO_AVX512 inline float outlierDot(const GemvInt8Args &a, int64_t n,
                                     int64_t m) {
  return dotBf16(a.outliers + n * a.numOutliers, a.xOut + m * a.numOutliers,
                 a.numOutliers);
}

/// Per-lane bound of the int32 accumulators: a lane takes 4 products per
/// 64 codes (two vpdpwssd or vpmaddwd of 32 pairs), each at most 127 x
/// 32767 in magnitude, so 8192 codes (512 products, < 2^31) are summed in
/// int32 before the lanes go into the row's int64 sum.
constexpr int64_t kChunkCodes = 8192;

/// The 16 int32 lanes' exact sum.
FOLIO_AVX512 inline int64_t reduceAddI32(__m512i v) {
  __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v));
  __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1));
  return _mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi));
}

/// acc[i][j] += the products of 64 widened codes of weight row i (w0[i],
/// w1[i]) with x row m + j's codes kk .. kk + 64.
template <int NR, int MR, bool Vnni>
FOLIO_AVX512_VNNI inline void
multiplyX(const GemvInt8Args &a, int64_t m, int64_t kk, const __m512i *w0,
          const __m512i *w1, __m512i (&acc)[NR][MR]) {
  for (int j = 0; j < MR; ++j) {
    const int16_t *xq = a.xq + (m + j) * a.kPadded + kk;
    __m512i x0 = _mm512_loadu_si512(xq), x1 = _mm512_loadu_si512(xq + 32);
    for (int i = 0; i < NR; ++i)
      acc[i][j] =
          dotPairs<Vnni>(dotPairs<Vnni>(acc[i][j], w0[i], x0), w1[i], x1);
  }
}

/// The decode tile: NR weight rows by MR rows of x's int16 codes. Per 64
/// codes of a row, two vpmovsxbw widen them to int16 (the loads fold into
/// them) and each pairs with 32 of x's codes: two multiply-adds per x row
/// where widening to f32 took four converts, three shuffles and four FMAs
/// (that tile read 0.88 of the read loop at M = 1; this one reaches it).
template <int NR, int MR, bool Vnni>
FOLIO_AVX512_VNNI void tileX16(const GemvInt8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, kWhole = k / 64 * 64;
  const int8_t *w = a.w + n * k;
  const int8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  int64_t sums[NR][MR] = {};
  for (int64_t c0 = 0; c0 < k; c0 += kChunkCodes) {
    const int64_t c1 = std::min(k, c0 + kChunkCodes);
    __m512i acc[NR][MR];
    for (int i = 0; i < NR; ++i)
      for (int j = 0; j < MR; ++j)
        acc[i][j] = _mm512_setzero_si512();
    int64_t kk = c0;
    for (; kk < std::min(c1, kWhole); kk += 64) {
      if (prefetch)
        for (int i = 0; i < NR; ++i)
          _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                       _MM_HINT_T0);
      __m512i w0[NR], w1[NR];
      for (int i = 0; i < NR; ++i) {
        const int8_t *p = w + i * k + kk;
        w0[i] = _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
        w1[i] = _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + 32)));
      }
      multiplyX<NR, MR, Vnni>(a, m, kk, w0, w1, acc);
    }
    if (kk < c1) {
      // The row's last codes, fewer than 64: masked loads (x is zero
      // padded).
      const int64_t left = c1 - kk;
      __mmask32 m0 = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
      __mmask32 m1 = left <= 32   ? 0
                     : left >= 64 ? ~__mmask32(0)
                                  : (__mmask32(1) << (left - 32)) - 1;
      __m512i w0[NR], w1[NR];
      for (int i = 0; i < NR; ++i) {
        const int8_t *p = w + i * k + kk;
        w0[i] = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m0, p));
        w1[i] = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m1, p + 32));
      }
      multiplyX<NR, MR, Vnni>(a, m, kk, w0, w1, acc);
    }
    for (int i = 0; i < NR; ++i)
      for (int j = 0; j < MR; ++j)
        sums[i][j] += reduceAddI32(acc[i][j]);
  }
  for (int i = 0; i < NR; ++i) {
    float scale = a.scales[n + i];
    float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int j = 0; j < MR; ++j)
      a.y[(m + j) * a.n + n + i] =
          int8GemvOutput(sums[i][j], a.xSteps[m + j], scale,
                         a.numOutliers ? outlierDot(a, n + i, m + j) : 0.0f, b);
  }
}

template <int NR, bool Vnni>
FOLIO_AVX512_VNNI void rowsOfX(const GemvInt8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tileX16<NR, 4, Vnni>(a, n, m);
  switch (a.m - m) {
  case 3:
    return tileX16<NR, 3, Vnni>(a, n, m);
  case 2:
    return tileX16<NR, 2, Vnni>(a, n, m);
  case 1:
    return tileX16<NR, 1, Vnni>(a, n, m);
  default:
    return;
  }
}

template <bool Vnni>
FOLIO_AVX512_VNNI void gemvInt8(const GemvInt8Args &a, int64_t nBegin,
                                int64_t nEnd) {
  int64_t n = nBegin;
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<4, Vnni>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<1, Vnni>(a, n);
}

} // namespace

void gemvInt8Avx512(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  if (hostFeatures().avx512vnni)
    return gemvInt8<true>(a, nBegin, nEnd);
  gemvInt8<false>(a, nBegin, nEnd);
}

void gemvInt8Avx512Madd(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  gemvInt8<false>(a, nBegin, nEnd);
}

void quantizeXInt16Avx512(const float *x, int64_t m, int64_t k, int16_t *dst,
                          int64_t kPadded, float *steps) {
  quantizeRows(x, m, k, dst, kPadded, steps);
}

} // namespace folio::cpu::detail
