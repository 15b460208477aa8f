//===- GemvInt8Avx2.cpp - AVX2 int8-weight kernel -------------------------===//
//
// Weight-only int8 on AVX2, GemvInt8Avx512.cpp's design in 8 lanes. Decode
// and batches (M <= kInt8GemvMaxRows) multiply the codes, widened 16 at a
// time to int16 (vpmovsxbw, the load folded in), with x's int16 codes
// (quantizeXInt16*, Gemv.h) by vpmaddwd into int32 lanes: exact integer
// sums, as every level computes them. Four weight rows (four streams, the
// next four prefetched once per line) by up to two x rows; further x rows
// take further passes over rows that are then in L1. Codes past the last
// whole 32 are summed in scalar code. Prefill (more rows) converts 16 rows
// at a time into an f32 panel (GemvPanelAvx2.cpp) and multiplies f32 x.
// Scales apply to the sums; outlier columns (bf16) are added after.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/GemvPanelAvx2.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

#define FOLIO_UNROLL _Pragma("GCC unroll 8")

/// xOut[m, :] . outliers[n, :] (bf16).
FOLIO_AVX2 float outlierDot(const GemvInt8Args &a, int64_t n, int64_t m) {
  const uint16_t *o = a.outliers + n * a.numOutliers;
  const float *xo = a.xOut + m * a.numOutliers;
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= a.numOutliers; j += 8) {
    __m256i h = _mm256_cvtepu16_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(o + j)));
    acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)),
                          _mm256_loadu_ps(xo + j), acc);
  }
  float s = reduceAdd(acc);
  for (; j < a.numOutliers; ++j)
    s += xo[j] * bf16ToFloat(o[j]);
  return s;
}

/// Per-lane bound of the int32 accumulators: a lane takes 4 products per
/// 32 codes (two vpmaddwd of 16 pairs), each at most 127 x 32767 in
/// magnitude, so 4096 codes (512 products, < 2^31) are summed in int32
/// before the lanes go into the row's int64 sum.
constexpr int64_t kChunkCodes = 4096;

/// The 8 int32 lanes' exact sum.
FOLIO_AVX2 inline int64_t reduceAddI32(__m256i v) {
  __m256i s =
      _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                       _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
  __m128i h =
      _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

template <int NR, int MR>
FOLIO_AVX2 void tileX16(const GemvInt8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, kVec = k / 32 * 32;
  const int8_t *w = a.w + n * k;
  const int8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  int64_t sums[NR][MR] = {};
  for (int64_t c0 = 0; c0 < kVec; c0 += kChunkCodes) {
    const int64_t c1 = std::min(kVec, c0 + kChunkCodes);
    __m256i acc[NR][MR];
    FOLIO_UNROLL
    for (int i = 0; i < NR; ++i)
      FOLIO_UNROLL
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm256_setzero_si256();
    for (int64_t kk = c0; kk < c1; kk += 32) {
      if (prefetch && (kk & 63) == 0) {
        FOLIO_UNROLL
        for (int i = 0; i < NR; ++i)
          _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                       _MM_HINT_T0);
      }
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        const int8_t *p = w + i * k + kk;
        __m256i w0 = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
        __m256i w1 = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16)));
        FOLIO_UNROLL
        for (int j = 0; j < MR; ++j) {
          const int16_t *xq = a.xq + (m + j) * a.kPadded + kk;
          __m256i s0 = _mm256_madd_epi16(
              w0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq)));
          __m256i s1 = _mm256_madd_epi16(
              w1,
              _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + 16)));
          acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_add_epi32(s0, s1));
        }
      }
    }
    FOLIO_UNROLL
    for (int i = 0; i < NR; ++i)
      FOLIO_UNROLL
    for (int j = 0; j < MR; ++j)
      sums[i][j] += reduceAddI32(acc[i][j]);
  }
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i) {
    const int8_t *row = w + i * k;
    float scale = a.scales[n + i];
    float b = a.bias ? a.bias[n + i] : 0.0f;
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      const int16_t *xq = a.xq + (m + j) * a.kPadded;
      int64_t s = sums[i][j];
      for (int64_t kk = kVec; kk < k; ++kk)
        s += int32_t(row[kk]) * int32_t(xq[kk]);
      a.y[(m + j) * a.n + n + i] =
          int8GemvOutput(s, a.xSteps[m + j], scale,
                         a.numOutliers ? outlierDot(a, n + i, m + j) : 0.0f, b);
    }
  }
}

template <int NR> FOLIO_AVX2 void rowsOfX(const GemvInt8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 2 <= a.m; m += 2)
    tileX16<NR, 2>(a, n, m);
  if (m < a.m)
    tileX16<NR, 1>(a, n, m);
}

/// quantizeXInt16Scalar's codes and steps, 16 elements at a time (the same
/// IEEE products; vcvtps2dq rounds to nearest even as nearbyint does).
FOLIO_AVX2 void quantizeRows(const float *x, int64_t m, int64_t k, int16_t *dst,
                             int64_t kPadded, float *steps) {
  const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
  const int64_t kVec = k / 8 * 8;
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * k;
    int16_t *codes = dst + r * kPadded;
    __m256 amaxV = _mm256_setzero_ps(), badV = _mm256_setzero_ps();
    for (int64_t c = 0; c < kVec; c += 8) {
      __m256 v = _mm256_andnot_ps(sign, _mm256_loadu_ps(row + c));
      badV = _mm256_or_ps(badV, _mm256_cmp_ps(v, big, _CMP_NLE_UQ));
      amaxV = _mm256_max_ps(amaxV, v);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, amaxV);
    float amax = 0;
    for (float l : lanes)
      amax = std::max(amax, l);
    bool bad = _mm256_movemask_ps(badV) != 0;
    for (int64_t c = kVec; c < k; ++c) {
      float v = std::fabs(row[c]);
      bad = bad || !(v <= FLT_MAX);
      amax = std::max(amax, v);
    }
    std::fill(codes + (bad ? 0 : k), codes + kPadded, int16_t(0));
    if (bad) {
      steps[r] = NAN;
      continue;
    }
    amax = std::max(amax, kInt8XAbsMaxFloor);
    const float invS = float(kInt8XCodeMax) / amax;
    const __m256 inv = _mm256_set1_ps(invS);
    steps[r] = amax / float(kInt8XCodeMax);
    int64_t c = 0;
    for (; c + 16 <= k; c += 16) {
      __m256i lo =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + c), inv));
      __m256i hi =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + c + 8), inv));
      // packs interleaves the 128-bit halves; the permute restores order.
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(codes + c),
          _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8));
    }
    for (; c < k; ++c)
      codes[c] = int16_t(std::nearbyint(row[c] * invS));
  }
}

/// Weights of rows n.. as f32 codes, 8 at a time (fillPanelAvx2).
struct Int8Codes {
  const int8_t *w;
  int64_t k;
  FOLIO_AVX2 __m256 operator()(int64_t r, int64_t c) const {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(w + r * k + c))));
  }
};

/// Rows [n, n + rows) as a panel of f32 codes, then every x row over it.
FOLIO_AVX2 void panelRows(const GemvInt8Args &a, int64_t n, int64_t rows,
                          std::vector<float> &panel) {
  const int8_t *w = a.w + n * a.k;
  const int64_t k = a.k;
  fillPanelAvx2(k, rows, panel, Int8Codes{w, k},
                [&](int64_t r, int64_t c) { return float(w[r * k + c]); });
  panelGemmAvx2(a.x, a.m, a.k, panel.data(), rows, a.scales + n,
                a.bias ? a.bias + n : nullptr, a.y + n, a.n);
  if (a.numOutliers)
    for (int64_t m = 0; m < a.m; ++m)
      for (int64_t r = 0; r < rows; ++r)
        a.y[m * a.n + n + r] += outlierDot(a, n + r, m);
}

} // namespace

void gemvInt8Avx2(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m > kInt8GemvMaxRows) {
    // Per worker thread: one panel of f32 codes.
    thread_local std::vector<float> panel;
    for (; n < nEnd; n += kPanelRowsAvx2)
      panelRows(a, n, std::min(kPanelRowsAvx2, nEnd - n), panel);
    return;
  }
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<1>(a, n);
}

void quantizeXInt16Avx2(const float *x, int64_t m, int64_t k, int16_t *dst,
                        int64_t kPadded, float *steps) {
  quantizeRows(x, m, k, dst, kPadded, steps);
}

} // namespace folio::cpu::detail
