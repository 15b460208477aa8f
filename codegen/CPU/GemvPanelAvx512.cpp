//===- GemvPanelAvx512.cpp - Prefill GEMM on a dequantized panel ----------===//
//
// The fp8 and int4 kernels dequantize 32 weight rows once into an f32
// panel, k-major, that stays in L2 (128 KiB at K = 1024), and run every x
// row over it: each converted weight then serves all of x instead of being
// converted again per few rows, and the weights are read from memory once
// per call. The micro-kernel is the usual one (GemvInt8Avx512.cpp's): 6 x
// rows by two vectors of outputs, each x element broadcast to both.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// See panelFromRowsAvx512 (Gemv.h): 16 rows by 16 columns at a time,
/// one transpose in registers and one 64-byte store per column.
FOLIO_AVX512 void panelFromRows(const float *rows, int64_t ld, int64_t numRows,
                                int64_t k, float *panel) {
  for (int64_t c0 = 0; c0 < k; c0 += 16) {
    const int64_t cols = std::min<int64_t>(16, k - c0);
    const __mmask16 m = cols == 16 ? __mmask16(0xffff) : tailMask(cols);
    for (int64_t r0 = 0; r0 < kDequantPanelRows; r0 += 16) {
      __m512 t[16];
      for (int i = 0; i < 16; ++i)
        t[i] = r0 + i < numRows
                   ? _mm512_maskz_loadu_ps(m, rows + (r0 + i) * ld + c0)
                   : _mm512_setzero_ps();
      transpose16(t);
      for (int j = 0; j < cols; ++j)
        _mm512_storeu_ps(panel + (c0 + j) * kDequantPanelRows + r0, t[j]);
    }
  }
}

template <int MR>
FOLIO_AVX512 void panelTile(const float *x, int64_t k, const float *panel,
                            int64_t cols, const float *bias, float *y,
                            int64_t ldy) {
  __m512 acc[MR][2];
  for (int j = 0; j < MR; ++j)
    acc[j][0] = acc[j][1] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    __m512 w0 = _mm512_loadu_ps(panel + kk * kDequantPanelRows);
    __m512 w1 = _mm512_loadu_ps(panel + kk * kDequantPanelRows + 16);
    for (int j = 0; j < MR; ++j) {
      __m512 xb = _mm512_set1_ps(x[j * k + kk]);
      acc[j][0] = _mm512_fmadd_ps(w0, xb, acc[j][0]);
      acc[j][1] = _mm512_fmadd_ps(w1, xb, acc[j][1]);
    }
  }
  for (int h = 0; h < 2; ++h) {
    int64_t left = cols - 16 * h;
    if (left <= 0)
      break;
    __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
    __m512 b =
        bias ? _mm512_maskz_loadu_ps(msk, bias + 16 * h) : _mm512_setzero_ps();
    for (int j = 0; j < MR; ++j)
      _mm512_mask_storeu_ps(y + j * ldy + 16 * h, msk,
                            _mm512_add_ps(acc[j][h], b));
  }
}

/// See gemmF16PanelAvx512 (Gemv.h).
FOLIO_AVX512 void f16Panels(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  // Per worker thread: one panel and its rows.
  thread_local std::vector<float> panel, rows;
  const int64_t k = a.k, ld = (k + 15) / 16 * 16;
  const uint16_t *w = static_cast<const uint16_t *>(a.w);
  panel.resize(size_t(k * kDequantPanelRows));
  rows.resize(size_t(kDequantPanelRows * ld));
  for (int64_t n = nBegin; n < nEnd; n += kDequantPanelRows) {
    const int64_t cols = std::min(kDequantPanelRows, nEnd - n);
    for (int64_t r = 0; r < cols; ++r)
      for (int64_t kk = 0; kk < k; kk += 16) {
        const __mmask16 m = k - kk >= 16 ? __mmask16(0xffff) : tailMask(k - kk);
        _mm512_storeu_ps(
            rows.data() + r * ld + kk,
            _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + (n + r) * k + kk)));
      }
    panelFromRows(rows.data(), ld, cols, k, panel.data());
    panelGemmAvx512(a.x, a.m, k, panel.data(), cols,
                    a.bias ? a.bias + n : nullptr, a.y + n, a.n);
  }
}

} // namespace

void panelFromRowsAvx512(const float *rows, int64_t ld, int64_t numRows,
                         int64_t k, float *panel) {
  panelFromRows(rows, ld, numRows, k, panel);
}

void gemmF16PanelAvx512(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  f16Panels(a, nBegin, nEnd);
}

void panelGemmAvx512(const float *x, int64_t m, int64_t k, const float *panel,
                     int64_t cols, const float *bias, float *y, int64_t ldy) {
  int64_t r = 0;
  for (; r + 6 <= m; r += 6)
    panelTile<6>(x + r * k, k, panel, cols, bias, y + r * ldy, ldy);
  switch (m - r) {
  case 5:
    return panelTile<5>(x + r * k, k, panel, cols, bias, y + r * ldy, ldy);
  case 4:
    return panelTile<4>(x + r * k, k, panel, cols, bias, y + r * ldy, ldy);
  case 3:
    return panelTile<3>(x + r * k, k, panel, cols, bias, y + r * ldy, ldy);
  case 2:
    return panelTile<2>(x + r * k, k, panel, cols, bias, y + r * ldy, ldy);
  case 1:
    return panelTile<1>(x + r * k, k, panel, cols, bias, y + r * ldy, ldy);
  default:
    return;
  }
}

} // namespace folio::cpu::detail
