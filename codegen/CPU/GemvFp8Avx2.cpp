//===- GemvFp8Avx2.cpp - AVX2 fp8_e4m3-weight kernel ----------------------===//
//
// Weight-only fp8 on AVX2 with GemvFp8Avx512.cpp's conversion: each code
// widened to a 16-bit lane, shifted into its high byte, arithmetically
// right by one and bit 14 cleared is the f16 encoding of the code's value
// times 2^-8 (subnormals included), which vcvtph2ps (F16C) widens exactly;
// the 2^8 goes into the row's scale. 16 codes per step: one 16-byte load,
// a widening move, three integer ops, two converts. Four weight rows by up
// to two x rows as GemvAvx2.cpp; codes past the last whole 16 are read
// from the exact scalar conversion. Prefill converts 16 rows at a time into
// an f32 panel (GemvPanelAvx2.cpp). The packer never writes the NaN codes.
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

/// 16 codes at p as two vectors of (code value) x 2^-8.
FOLIO_AVX2 inline void codes16(const uint8_t *p, __m256 &lo, __m256 &hi) {
  __m256i c = _mm256_cvtepu8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  __m256i h = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(c, 8), 1),
                               _mm256_set1_epi16(int16_t(0xbfff)));
  lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
  hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

template <int NR, int MR>
FOLIO_AVX2 void tile(const GemvFp8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, kVec = k / 16 * 16;
  const uint8_t *w = a.w + n * k;
  const uint8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m256 acc[NR][MR];
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i)
    FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    acc[i][j] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < kVec; kk += 16) {
    if (prefetch && (kk & 63) == 0) {
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                     _MM_HINT_T0);
    }
    FOLIO_UNROLL
    for (int i = 0; i < NR; ++i) {
      __m256 lo, hi;
      codes16(w + i * k + kk, lo, hi);
      FOLIO_UNROLL
      for (int j = 0; j < MR; ++j) {
        const float *x = a.x + (m + j) * k + kk;
        acc[i][j] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x), acc[i][j]);
        acc[i][j] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + 8), acc[i][j]);
      }
    }
  }
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i) {
    const uint8_t *row = w + i * k;
    float scale = a.scales[n + i];
    float b = a.bias ? a.bias[n + i] : 0.0f;
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      float s = reduceAdd(acc[i][j]) * 256.0f;
      const float *x = a.x + (m + j) * k;
      for (int64_t kk = kVec; kk < k; ++kk)
        s += x[kk] * fp8E4M3ToFloat(row[kk]);
      a.y[(m + j) * a.n + n + i] = s * scale + b;
    }
  }
}

template <int NR> FOLIO_AVX2 void rowsOfX(const GemvFp8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 2 <= a.m; m += 2)
    tile<NR, 2>(a, n, m);
  if (m < a.m)
    tile<NR, 1>(a, n, m);
}

/// Weights of rows n.. as f32 values of their codes, 8 at a time
/// (fillPanelAvx2): the f16 trick of codes16 on 8 codes, times 2^8.
struct Fp8Values {
  const uint8_t *w;
  int64_t k;
  FOLIO_AVX2 __m256 operator()(int64_t r, int64_t c) const {
    __m128i h = _mm_cvtepu8_epi16(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(w + r * k + c)));
    h = _mm_and_si128(_mm_srai_epi16(_mm_slli_epi16(h, 8), 1),
                      _mm_set1_epi16(int16_t(0xbfff)));
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
  }
};

/// Rows [n, n + rows) as a panel of the codes' f32 values, then every x row
/// over it.
FOLIO_AVX2 void panelRows(const GemvFp8Args &a, int64_t n, int64_t rows,
                          std::vector<float> &panel) {
  const uint8_t *w = a.w + n * a.k;
  const int64_t k = a.k;
  fillPanelAvx2(k, rows, panel, Fp8Values{w, k}, [&](int64_t r, int64_t c) {
    return fp8E4M3ToFloat(w[r * k + c]);
  });
  panelGemmAvx2(a.x, a.m, k, panel.data(), rows, a.scales + n,
                a.bias ? a.bias + n : nullptr, a.y + n, a.n);
}

} // namespace

void gemvFp8Avx2(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m > kConvertTileRows) {
    // Per worker thread: one panel of f32 weights.
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
