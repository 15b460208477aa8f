//===- GemvFp8Avx512.cpp - AVX-512 fp8_e4m3-weight kernel -----------------===//
//
// Weight-only fp8: decode reads one byte per weight and converts it in
// registers. An e4m3 code's exponent (4 bits, bias 7) and mantissa (3
// bits) fit f16's fields: the code shifted into the high byte of a 16-bit
// lane and arithmetically right by one (then bit 14 cleared) is an f16
// whose value is the code's times 2^-8, subnormals included, and vcvtph2ps
// widens it exactly (MXCSR.DAZ does not apply to it). That is four integer
// ops and a convert per 16 weights, no table: a 256-entry f32 table needs
// 16 registers or a gather per 16 weights (vpermi2ps covers 32 entries),
// and building the f32 bits directly has to special-case the subnormal
// codes. The 2^8 goes into the row's scale. The packer never writes the
// NaN codes (0x7f, 0xff; weights are finite), so they are not handled.
// Structure as GemvInt8Avx512.cpp: four weight rows (four prefetch streams)
// by up to four x rows; prefill converts 32 rows once into an f32 panel
// (GemvPanelAvx512.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

template <int NR, int MR>
FOLIO_AVX512 void tile(const GemvFp8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k;
  const uint8_t *w = a.w + n * k;
  const uint8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; kk += 32) {
    int64_t left = k - kk;
    __mmask32 msk = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
    __mmask16 m0 = __mmask16(msk), m1 = __mmask16(msk >> 16);
    if (prefetch && kk % 64 == 0)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                     _MM_HINT_T0);
    for (int i = 0; i < NR; ++i) {
      __m512 lo, hi;
      e4m3Codes32(w + i * k + kk, msk, lo, hi);
      for (int j = 0; j < MR; ++j) {
        const float *x = a.x + (m + j) * k + kk;
        acc[i][j] =
            _mm512_fmadd_ps(lo, _mm512_maskz_loadu_ps(m0, x), acc[i][j]);
        acc[i][j] =
            _mm512_fmadd_ps(hi, _mm512_maskz_loadu_ps(m1, x + 16), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    float scale = a.scales[n + i] * 256.0f;
    float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int j = 0; j < MR; ++j)
      a.y[(m + j) * a.n + n + i] = _mm512_reduce_add_ps(acc[i][j]) * scale + b;
  }
}

template <int NR> FOLIO_AVX512 void rowsOfX(const GemvFp8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tile<NR, 4>(a, n, m);
  switch (a.m - m) {
  case 3:
    return tile<NR, 3>(a, n, m);
  case 2:
    return tile<NR, 2>(a, n, m);
  case 1:
    return tile<NR, 1>(a, n, m);
  default:
    return;
  }
}

/// Rows [n, n + rows) dequantized into the k-major panel, then x over it.
/// Each row is converted 32 codes at a time as the GEMV does into `row`,
/// then transposed into the panel by scalar stores (a scalar table lookup
/// per weight took twice as long for int4's equivalent).
FOLIO_AVX512 void panelRows(const GemvFp8Args &a, int64_t n, int64_t rows,
                            std::vector<float> &panel,
                            std::vector<float> &row) {
  const int64_t k = a.k;
  panel.assign(size_t(k * kDequantPanelRows), 0.0f);
  row.resize(size_t((k + 31) / 32 * 32));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *w = a.w + (n + r) * k;
    __m512 scale = _mm512_set1_ps(a.scales[n + r] * 256.0f);
    for (int64_t kk = 0; kk < k; kk += 32) {
      int64_t left = k - kk;
      __mmask32 msk = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
      __m512 lo, hi;
      e4m3Codes32(w + kk, msk, lo, hi);
      _mm512_storeu_ps(row.data() + kk, _mm512_mul_ps(lo, scale));
      _mm512_storeu_ps(row.data() + kk + 16, _mm512_mul_ps(hi, scale));
    }
    for (int64_t c = 0; c < k; ++c)
      panel[size_t(c * kDequantPanelRows + r)] = row[size_t(c)];
  }
  panelGemmAvx512(a.x, a.m, k, panel.data(), rows,
                  a.bias ? a.bias + n : nullptr, a.y + n, a.n);
}

} // namespace

void gemvFp8Avx512(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m > kConvertTileRows) {
    // Per worker thread: one panel of dequantized weights.
    thread_local std::vector<float> panel, row;
    for (; n < nEnd; n += kDequantPanelRows)
      panelRows(a, n, std::min(kDequantPanelRows, nEnd - n), panel, row);
    return;
  }
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<1>(a, n);
}

} // namespace folio::cpu::detail
