//===- GemvInt8Avx2.cpp - AVX2 int8-weight kernel -------------------------===//
//
// Weight-only int8 on AVX2, GemvInt8Avx512.cpp's design in 8 lanes. Decode
// (M <= kConvertTileRows) reads x in the quad-split layout (Gemv.h, blocks
// of 64): a 32-byte load of 32 codes holds code 4l + j in byte j of 32-bit
// lane l, so two in-lane shifts and a convert make the j-th 8 codes an f32
// vector that pairs with x's quad-split elements 16j + l (l = 0-7 for the
// first 32 codes of a block, 8-15 for the second): no cross-lane widening.
// Four weight rows (four streams, the next four prefetched once per line)
// by up to two x rows; further x rows take further passes over rows that
// are then in L1. Codes past the last whole 32 are summed in scalar code.
// Prefill converts 16 rows at a time into an f32 panel (GemvPanelAvx2.cpp).
// Scales apply to the reduced sums; outlier columns (bf16) are added after.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/GemvPanelAvx2.h"

#include <algorithm>
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

template <int NR, int MR>
FOLIO_AVX2 void tileQuad(const GemvInt8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, kVec = k / 32 * 32;
  const int8_t *w = a.w + n * k;
  const int8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m256 acc[NR][MR];
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i)
    FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    acc[i][j] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < kVec; kk += 32) {
    if (prefetch && (kk & 63) == 0) {
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                     _MM_HINT_T0);
    }
    // Where this half block's lanes sit in x's quad-split block.
    const float *xq =
        a.xQuads + m * a.kQuads + (kk & ~int64_t(63)) + ((kk & 32) ? 8 : 0);
    FOLIO_UNROLL
    for (int i = 0; i < NR; ++i) {
      __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + i * k + kk));
      __m256 q[4] = {
          _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 24), 24)),
          _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 16), 24)),
          _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(v, 8), 24)),
          _mm256_cvtepi32_ps(_mm256_srai_epi32(v, 24))};
      FOLIO_UNROLL
      for (int j = 0; j < MR; ++j)
        FOLIO_UNROLL
      for (int b = 0; b < 4; ++b)
        acc[i][j] = _mm256_fmadd_ps(
            q[b], _mm256_loadu_ps(xq + j * a.kQuads + 16 * b), acc[i][j]);
    }
  }
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i) {
    const int8_t *row = w + i * k;
    float scale = a.scales[n + i];
    float b = a.bias ? a.bias[n + i] : 0.0f;
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      float s = reduceAdd(acc[i][j]);
      const float *x = a.x + (m + j) * k;
      for (int64_t kk = kVec; kk < k; ++kk)
        s += x[kk] * float(row[kk]);
      float o = a.numOutliers ? outlierDot(a, n + i, m + j) : 0.0f;
      a.y[(m + j) * a.n + n + i] = s * scale + o + b;
    }
  }
}

template <int NR> FOLIO_AVX2 void rowsOfX(const GemvInt8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 2 <= a.m; m += 2)
    tileQuad<NR, 2>(a, n, m);
  if (m < a.m)
    tileQuad<NR, 1>(a, n, m);
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
  if (a.m > kConvertTileRows) {
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

} // namespace folio::cpu::detail
