//===- GemvInt4Avx2.cpp - AVX2 int4-weight kernel -------------------------===//
//
// The packing (WeightPack.h) puts weight 16j + l of a 128-weight block in
// nibble j of 32-bit word l of its 64-byte line. A 32-byte load holds words
// 0-7 (or 8-15), so `(v >> 4j) & 15` is the codes of 8 consecutive weights
// 16j + 0..7 (or 16j + 8..15) in lane order, converted to f32 and multiplied
// with plain x: no unpacking shuffle. AVX2's vpermps indexes 8 entries, too
// few for GemvInt4Avx512.cpp's 16-entry table of the group's values, so
// the codes themselves are accumulated per group and the group's f16
// (scale, min) folded in at its end: sum x (min + q scale) = scale (sum x q)
// + min (sum x), both as vectors (one FMA each per group, row and x row).
// That is five operations per 8 weights (load, shift, mask, convert, FMA),
// so at one token this kernel is bound by the core rather than by reading
// its half byte per weight. Four weight rows by one x row for decode, two
// by two otherwise (16 registers hold no more accumulators); prefill
// dequantizes 16 rows at a time into an f32 panel (GemvPanelAvx2.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/GemvPanelAvx2.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

#define FOLIO_UNROLL _Pragma("GCC unroll 8")

/// The codes of weights 16j + 8h .. + 8 of the block whose bytes start at p.
FOLIO_AVX2 inline __m256 codes8(const uint8_t *p, int j, int h) {
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p) + h);
  return _mm256_cvtepi32_ps(
      _mm256_and_si256(_mm256_srli_epi32(v, 4 * j), _mm256_set1_epi32(0xf)));
}

/// The group's (scale, min) broadcast.
FOLIO_AVX2 inline void groupParams(const uint16_t *p, __m256 &scale,
                                   __m256 &min) {
  __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(int(p[0] | p[1] << 16)));
  scale = _mm256_broadcastss_ps(sm);
  min = _mm256_broadcastss_ps(_mm_movehdup_ps(sm));
}

/// x[base + 16j + 8h ..], zero past k.
FOLIO_AVX2 inline __m256 loadX(const float *x, int64_t k, int64_t at) {
  return k - at >= 8 ? _mm256_loadu_ps(x + at) : loadTail(x + at, k - at);
}

/// NR weight rows by MR x rows; JG = 16-weight vectors per group.
template <int NR, int MR, int JG>
FOLIO_AVX2 void tile(const GemvInt4Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, rowBytes = int4RowBytes(k);
  const int64_t groups = int4Groups(k, a.groupSize);
  const uint8_t *w = a.w + n * rowBytes;
  const uint8_t *next = w + NR * rowBytes;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m256 acc[NR][MR];
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i)
    FOLIO_UNROLL
  for (int r = 0; r < MR; ++r)
    acc[i][r] = _mm256_setzero_ps();
  for (int64_t base = 0; base < k; base += kInt4Block) {
    const int64_t blockOff = base / 2;
    // 16-weight vectors in this block; the last may be partial.
    const int jEnd = int(std::min<int64_t>(8, (k - base + 15) / 16));
    if (prefetch) {
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(
            reinterpret_cast<const char *>(next + i * rowBytes + blockOff),
            _MM_HINT_T0);
    }
    for (int j0 = 0; j0 < jEnd; j0 += JG) {
      __m256 accQ[NR][MR], xs[MR];
      FOLIO_UNROLL
      for (int r = 0; r < MR; ++r) {
        xs[r] = _mm256_setzero_ps();
        FOLIO_UNROLL
        for (int i = 0; i < NR; ++i)
          accQ[i][r] = _mm256_setzero_ps();
      }
      const int jStop = std::min(j0 + JG, jEnd);
      for (int j = j0; j < jStop; ++j)
        FOLIO_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int64_t at = base + 16 * j + 8 * h;
        if (at >= k)
          break;
        __m256 xv[MR];
        FOLIO_UNROLL
        for (int r = 0; r < MR; ++r) {
          xv[r] = loadX(a.x + (m + r) * k, k, at);
          xs[r] = _mm256_add_ps(xs[r], xv[r]);
        }
        FOLIO_UNROLL
        for (int i = 0; i < NR; ++i) {
          __m256 q = codes8(w + i * rowBytes + blockOff, j, h);
          FOLIO_UNROLL
          for (int r = 0; r < MR; ++r)
            accQ[i][r] = _mm256_fmadd_ps(q, xv[r], accQ[i][r]);
        }
      }
      const int64_t g = (base + 16 * j0) / a.groupSize;
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        __m256 scale, min;
        groupParams(a.params + ((n + i) * groups + g) * 2, scale, min);
        FOLIO_UNROLL
        for (int r = 0; r < MR; ++r)
          acc[i][r] = _mm256_fmadd_ps(
              xs[r], min, _mm256_fmadd_ps(accQ[i][r], scale, acc[i][r]));
      }
    }
  }
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i) {
    float b = a.bias ? a.bias[n + i] : 0.0f;
    FOLIO_UNROLL
    for (int r = 0; r < MR; ++r)
      a.y[(m + r) * a.n + n + i] = reduceAdd(acc[i][r]) + b;
  }
}

template <int JG>
FOLIO_AVX2 void gemvRows(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m == 1) {
    for (; n + 4 <= nEnd; n += 4)
      tile<4, 1, JG>(a, n, 0);
    for (; n < nEnd; ++n)
      tile<1, 1, JG>(a, n, 0);
    return;
  }
  for (; n + 2 <= nEnd; n += 2) {
    int64_t m = 0;
    for (; m + 2 <= a.m; m += 2)
      tile<2, 2, JG>(a, n, m);
    if (m < a.m)
      tile<2, 1, JG>(a, n, m);
  }
  for (; n < nEnd; ++n)
    for (int64_t m = 0; m < a.m; ++m)
      tile<1, 1, JG>(a, n, m);
}

/// Weights of rows n.. dequantized (min + q scale), 8 at a time
/// (fillPanelAvx2): c is a multiple of 8, so its 8 weights are one codes8
/// of one group.
struct Int4Values {
  const GemvInt4Args &a;
  int64_t n;
  FOLIO_AVX2 __m256 operator()(int64_t r, int64_t c) const {
    const int64_t groups = int4Groups(a.k, a.groupSize);
    const uint8_t *w = a.w + (n + r) * int4RowBytes(a.k);
    const int64_t base = c / kInt4Block * kInt4Block, e = c - base;
    __m256 scale, min;
    groupParams(a.params + ((n + r) * groups + c / a.groupSize) * 2, scale,
                min);
    return _mm256_fmadd_ps(codes8(w + base / 2, int(e / 16), int(e % 16 / 8)),
                           scale, min);
  }
};

/// Rows [n, n + rows) dequantized into a k-major panel, then every x row
/// over it.
FOLIO_AVX2 void panelRows(const GemvInt4Args &a, int64_t n, int64_t rows,
                          std::vector<float> &panel) {
  const int64_t groups = int4Groups(a.k, a.groupSize);
  const int64_t rowBytes = int4RowBytes(a.k);
  fillPanelAvx2(a.k, rows, panel, Int4Values{a, n}, [&](int64_t r, int64_t c) {
    const uint16_t *p = a.params + ((n + r) * groups + c / a.groupSize) * 2;
    return f16ToFloat(p[1]) +
           float(int4CodeAt(a.w + (n + r) * rowBytes, c)) * f16ToFloat(p[0]);
  });
  panelGemmAvx2(a.x, a.m, a.k, panel.data(), rows, /*scales=*/nullptr,
                a.bias ? a.bias + n : nullptr, a.y + n, a.n);
}

} // namespace

void gemvInt4Avx2(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
  if (a.m > kConvertTileRows) {
    // Per worker thread: one panel of dequantized weights.
    thread_local std::vector<float> panel;
    for (int64_t n = nBegin; n < nEnd; n += kPanelRowsAvx2)
      panelRows(a, n, std::min(kPanelRowsAvx2, nEnd - n), panel);
    return;
  }
  switch (a.groupSize) {
  case 32:
    return gemvRows<2>(a, nBegin, nEnd);
  case 64:
    return gemvRows<4>(a, nBegin, nEnd);
  default:
    return gemvRows<8>(a, nBegin, nEnd);
  }
}

} // namespace folio::cpu::detail
