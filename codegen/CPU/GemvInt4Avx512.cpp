//===- GemvInt4Avx512.cpp - AVX-512 int4-weight kernel --------------------===//
//
// Decode reads half a byte per weight plus 4 bytes of f16 (scale, min) per
// group. The packing (WeightPack.h) puts weight 16j + l of a 128-weight
// block in nibble j of 32-bit word l of its 64-byte line, so one load per
// block and row, then per j a shift gives 16 consecutive weights' codes in
// the low 4 bits of the lanes, in lane order: no cross-lane unpacking and no
// reordering of x. Per group and row one FMA makes the group's 16 possible
// weights, min + q * scale for q = 0..15, into a vector, and vpermps (which
// reads only the low 4 bits of each index) turns the shifted codes into
// their f32 weights: two ops per 16 weights, then an FMA with f32 x into
// one accumulator per row. Alternatives measured on the AMD EPYC (Zen 4)
// build machine, one token's 110M-Llama GEMVs alternated in one process:
// shift, mask and convert to the codes, an accumulator per group folded in
// by the group's scale and min x sum(x): this kernel ran 0.87-1.07 of its
// time (median of 9 runs 0.97); rotating the nibble into 1.0f's mantissa
// (vprolvd and one vpternlogd) was 2-9 % slower than that. Quantizing x to
// int8 per group for VNNI (vpdpbusd, as llama.cpp's Q4 x Q8 paths do) would
// add a second rounding and was not built: decode is bound by reading the
// weights. Four weight rows by one x row for decode, two by up to four for
// small batches; prefill dequantizes 32 rows once into an f32 panel
// (GemvPanelAvx512.cpp).
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// JG = nibble indices per group (groupSize / 16). Per group and weight
/// row, the 16 values the group's codes stand for, min + q * scale, are
/// one vector (one FMA on 0..15); vpermps then turns each 16 codes
/// straight into their weights (it reads the low 4 bits of each lane, so
/// no mask), and one accumulator per row and x row takes them.
template <int NR, int MR, int JG>
FOLIO_AVX512 void tile(const GemvInt4Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, rowBytes = int4RowBytes(k);
  const int64_t groups = int4Groups(k, a.groupSize);
  const uint8_t *w = a.w + n * rowBytes;
  const uint8_t *next = w + NR * rowBytes;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  const __m512 iota =
      _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int r = 0; r < MR; ++r)
      acc[i][r] = _mm512_setzero_ps();
  for (int64_t base = 0; base < k; base += kInt4Block) {
    const int64_t blockOff = base / 2;
    // Vectors of 16 in this block; the last may be partial (masked x).
    const int jEnd = int(std::min<int64_t>(8, (k - base + 15) / 16));
    if (prefetch)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(
            reinterpret_cast<const char *>(next + i * rowBytes + blockOff),
            _MM_HINT_T0);
    __m512i v[NR];
    for (int i = 0; i < NR; ++i)
      v[i] = _mm512_loadu_si512(w + i * rowBytes + blockOff);
    for (int j0 = 0; j0 < jEnd; j0 += JG) {
      const int64_t g = (base + 16 * j0) / a.groupSize;
      __m512 lut[NR];
      for (int i = 0; i < NR; ++i) {
        const uint16_t *p = a.params + ((n + i) * groups + g) * 2;
        __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(int(p[0] | p[1] << 16)));
        lut[i] = _mm512_fmadd_ps(iota, _mm512_broadcastss_ps(sm),
                                 _mm512_broadcastss_ps(_mm_movehdup_ps(sm)));
      }
      // Whole groups are JG vectors; a short last group fewer.
      const int jStop = std::min(j0 + JG, jEnd);
      for (int j = j0; j < jStop; ++j) {
        const int64_t left = k - base - 16 * j;
        const __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
        __m512 xv[MR];
        for (int r = 0; r < MR; ++r)
          xv[r] = _mm512_maskz_loadu_ps(msk, a.x + (m + r) * k + base + 16 * j);
        for (int i = 0; i < NR; ++i) {
          __m512 wv =
              _mm512_permutexvar_ps(_mm512_srli_epi32(v[i], 4 * j), lut[i]);
          for (int r = 0; r < MR; ++r)
            acc[i][r] = _mm512_fmadd_ps(wv, xv[r], acc[i][r]);
        }
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int r = 0; r < MR; ++r)
      a.y[(m + r) * a.n + n + i] = _mm512_reduce_add_ps(acc[i][r]) + b;
  }
}

template <int NR, int JG>
FOLIO_AVX512 void rowsOfX(const GemvInt4Args &a, int64_t n) {
  int64_t m = 0;
  if constexpr (NR <= 2)
    for (; m + 4 <= a.m; m += 4)
      tile<NR, 4, JG>(a, n, m);
  for (; m + 2 <= a.m; m += 2)
    tile<NR, 2, JG>(a, n, m);
  if (m < a.m)
    tile<NR, 1, JG>(a, n, m);
}

template <int JG>
FOLIO_AVX512 void gemvRows(const GemvInt4Args &a, int64_t nBegin,
                           int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m == 1) {
    for (; n + 4 <= nEnd; n += 4)
      rowsOfX<4, JG>(a, n);
  } else {
    for (; n + 2 <= nEnd; n += 2)
      rowsOfX<2, JG>(a, n);
  }
  for (; n < nEnd; ++n)
    rowsOfX<1, JG>(a, n);
}

/// Rows [n, n + rows) dequantized into the k-major panel, then x over it.
/// Each row is dequantized 16 weights at a time as the GEMV does (shift,
/// table of the group's values, vpermps) into `row`, then the rows are
/// transposed into the panel in registers.
FOLIO_AVX512 void panelRows(const GemvInt4Args &a, int64_t n, int64_t rows,
                            std::vector<float> &panel,
                            std::vector<float> &row) {
  const int64_t k = a.k, groups = int4Groups(k, a.groupSize);
  const int64_t rowBytes = int4RowBytes(k);
  const __m512 iota =
      _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int64_t ld = rowBytes * 2;
  panel.resize(size_t(k * kDequantPanelRows));
  row.resize(size_t(rows * ld));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *w = a.w + (n + r) * rowBytes;
    float *dst = row.data() + r * ld;
    const uint16_t *p = a.params + (n + r) * groups * 2;
    for (int64_t base = 0; base < k; base += kInt4Block) {
      __m512i v = _mm512_loadu_si512(w + base / 2);
      const int jEnd = int(std::min<int64_t>(8, (k - base + 15) / 16));
      for (int j = 0; j < jEnd; ++j) {
        const uint16_t *gp = p + (base + 16 * j) / a.groupSize * 2;
        __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(int(gp[0] | gp[1] << 16)));
        __m512 lut =
            _mm512_fmadd_ps(iota, _mm512_broadcastss_ps(sm),
                            _mm512_broadcastss_ps(_mm_movehdup_ps(sm)));
        _mm512_storeu_ps(
            dst + base + 16 * j,
            _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4 * j), lut));
      }
    }
  }
  panelFromRowsAvx512(row.data(), ld, rows, k, panel.data());
  panelGemmAvx512(a.x, a.m, k, panel.data(), rows,
                  a.bias ? a.bias + n : nullptr, a.y + n, a.n);
}

} // namespace

void gemvInt4Avx512(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
  if (a.m > kConvertTileRows) {
    // Per worker thread: one panel of dequantized weights.
    thread_local std::vector<float> panel, row;
    for (int64_t n = nBegin; n < nEnd; n += kDequantPanelRows)
      panelRows(a, n, std::min(kDequantPanelRows, nEnd - n), panel, row);
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
