//===- GemvInt8Avx512.cpp - AVX-512 int8-weight kernel --------------------===//
//
// Weight-only int8: the weights are widened in registers and multiplied
// with f32 x, so decode reads one byte per weight and x keeps its
// precision. The structure is GemvAvx512.cpp's: four weight rows at a time
// (four prefetcher streams), up to four x rows reusing each widened weight
// vector, the next four rows prefetched once per 64-byte line, and its
// trick: x in a quad-split layout (Gemv.h) lets one 64-byte load of codes
// become four f32 vectors by in-lane shifts, where widening 16 codes at a
// time (vpmovsxbd, a cross-lane shuffle each) read 10-25 % fewer bytes/s.
// Prefill (M > kConvertTileRows) is a GEMM: 32 weight rows at a time are
// converted once to f32 codes in a k-major panel (a per-thread scratch that
// stays in L2), and a micro-kernel runs 6 x rows by the panel's 32 outputs,
// broadcasting each x element to two vectors of weights; the conversion costs
// once per weight for all of x. Scales apply to the reduced sums (GEMV) or to
// the finished outputs (GEMM).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// xOut[m, :] . outliers[n, :] (bf16).
FOLIO_AVX512 inline float outlierDot(const GemvInt8Args &a, int64_t n,
                                     int64_t m) {
  return dotBf16(a.outliers + n * a.numOutliers, a.xOut + m * a.numOutliers,
                 a.numOutliers);
}

/// vpshufb indices that move byte j of each 32-bit lane to the lane's top
/// byte and zero the other three.
FOLIO_AVX512 inline __m512i topByteIndex(int j) {
  auto lane = [j](int l) {
    return int(0x00808080u | unsigned(4 * l + j) << 24);
  };
  return _mm512_broadcast_i32x4(
      _mm_setr_epi32(lane(0), lane(1), lane(2), lane(3)));
}

/// 2^-24: the codes enter the sums as code x 2^24 (below).
constexpr float kCodeUnit = 1.0f / 16777216.0f;

/// The decode tile on quad-split x (xQuads, Gemv.h): one 64-byte load
/// brings 64 codes, and byte j of each 32-bit lane, moved to the lane's top
/// byte with the rest zero (vpshufb, in-lane; j = 3 by a mask), is the
/// int32 code x 2^24, which converts exactly; the j-th 16-vector of x's
/// block pairs with it. The sums are then 2^24 times the plain ones,
/// exactly (a power of two), and are scaled back before the row's scale.
/// One shuffle and one convert per 16 codes: two shifts and a convert (the
/// sign extension's way) all run on one port on Intel cores, where this
/// tile was bound by that port; the shuffle runs on another. (The products
/// overflow only for |x| above ~1e29 / K.)
template <int NR, int MR>
FOLIO_AVX512 void tileQuad(const GemvInt8Args &a, int64_t n, int64_t m) {
  const __m512i idx0 = topByteIndex(0), idx1 = topByteIndex(1),
                idx2 = topByteIndex(2);
  const __m512i top = _mm512_set1_epi32(int(0xff000000u));
  const int64_t k = a.k;
  const int8_t *w = a.w + n * k;
  const int8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; kk += 64) {
    __mmask64 msk =
        k - kk >= 64 ? ~__mmask64(0) : (__mmask64(1) << (k - kk)) - 1;
    if (prefetch)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                     _MM_HINT_T0);
    for (int i = 0; i < NR; ++i) {
      __m512i v = _mm512_maskz_loadu_epi8(msk, w + i * k + kk);
      __m512 q[4] = {_mm512_cvtepi32_ps(_mm512_shuffle_epi8(v, idx0)),
                     _mm512_cvtepi32_ps(_mm512_shuffle_epi8(v, idx1)),
                     _mm512_cvtepi32_ps(_mm512_shuffle_epi8(v, idx2)),
                     _mm512_cvtepi32_ps(_mm512_and_si512(v, top))};
      for (int j = 0; j < MR; ++j) {
        const float *xq = a.xQuads + (m + j) * a.kQuads + kk;
        for (int b = 0; b < 4; ++b)
          acc[i][j] =
              _mm512_fmadd_ps(q[b], _mm512_loadu_ps(xq + 16 * b), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    float scale = a.scales[n + i];
    float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int j = 0; j < MR; ++j) {
      float o = a.numOutliers ? outlierDot(a, n + i, m + j) : 0.0f;
      a.y[(m + j) * a.n + n + i] =
          _mm512_reduce_add_ps(acc[i][j]) * kCodeUnit * scale + o + b;
    }
  }
}

template <int NR> FOLIO_AVX512 void rowsOfX(const GemvInt8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tileQuad<NR, 4>(a, n, m);
  switch (a.m - m) {
  case 3:
    return tileQuad<NR, 3>(a, n, m);
  case 2:
    return tileQuad<NR, 2>(a, n, m);
  case 1:
    return tileQuad<NR, 1>(a, n, m);
  default:
    return;
  }
}

/// Output rows per prefill panel: two vectors.
constexpr int64_t kPanelRows = 32;

/// Prefill: y[m .. m + MR, n .. n + 32] from a panel of f32 codes, k-major
/// (`panel[kk * 32 + r]` = code of row n + r at column kk, zero past the
/// weight's last row), the usual GEMM micro-kernel: per column one panel
/// line of two vectors, each x element broadcast to both, 2 x MR FMAs.
template <int MR>
FOLIO_AVX512 void panelTile(const GemvInt8Args &a, const float *panel,
                            int64_t n, int64_t rows, int64_t m) {
  __m512 acc[MR][2];
  for (int j = 0; j < MR; ++j)
    acc[j][0] = acc[j][1] = _mm512_setzero_ps();
  const float *x = a.x + m * a.k;
  for (int64_t kk = 0; kk < a.k; ++kk) {
    __m512 w0 = _mm512_loadu_ps(panel + kk * kPanelRows);
    __m512 w1 = _mm512_loadu_ps(panel + kk * kPanelRows + 16);
    for (int j = 0; j < MR; ++j) {
      __m512 xb = _mm512_set1_ps(x[j * a.k + kk]);
      acc[j][0] = _mm512_fmadd_ps(w0, xb, acc[j][0]);
      acc[j][1] = _mm512_fmadd_ps(w1, xb, acc[j][1]);
    }
  }
  for (int h = 0; h < 2; ++h) {
    int64_t left = rows - 16 * h;
    if (left <= 0)
      break;
    __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
    __m512 scale = _mm512_maskz_loadu_ps(msk, a.scales + n + 16 * h);
    __m512 bias = a.bias ? _mm512_maskz_loadu_ps(msk, a.bias + n + 16 * h)
                         : _mm512_setzero_ps();
    for (int j = 0; j < MR; ++j) {
      float *y = a.y + (m + j) * a.n + n + 16 * h;
      _mm512_mask_storeu_ps(y, msk, _mm512_fmadd_ps(acc[j][h], scale, bias));
      if (a.numOutliers)
        for (int64_t r = 0; r < std::min<int64_t>(left, 16); ++r)
          y[r] += outlierDot(a, n + 16 * h + r, m + j);
    }
  }
}

/// Weight rows [n, n + rows) (rows <= kPanelRows) as a panel, then every
/// 6 x rows over it: the panel (96 KiB at K = 768) stays in L2 and each
/// converted weight serves all of x.
FOLIO_AVX512 void panelRows(const GemvInt8Args &a, int64_t n, int64_t rows,
                            std::vector<float> &panel) {
  panel.assign(size_t(a.k * kPanelRows), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t *w = a.w + (n + r) * a.k;
    for (int64_t kk = 0; kk < a.k; ++kk)
      panel[size_t(kk * kPanelRows + r)] = float(w[kk]);
  }
  int64_t m = 0;
  for (; m + 6 <= a.m; m += 6)
    panelTile<6>(a, panel.data(), n, rows, m);
  switch (a.m - m) {
  case 5:
    return panelTile<5>(a, panel.data(), n, rows, m);
  case 4:
    return panelTile<4>(a, panel.data(), n, rows, m);
  case 3:
    return panelTile<3>(a, panel.data(), n, rows, m);
  case 2:
    return panelTile<2>(a, panel.data(), n, rows, m);
  case 1:
    return panelTile<1>(a, panel.data(), n, rows, m);
  default:
    return;
  }
}

} // namespace

void gemvInt8Avx512(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m > kConvertTileRows) {
    // Per worker thread: one panel of f32 codes.
    thread_local std::vector<float> panel;
    for (; n < nEnd; n += kPanelRows)
      panelRows(a, n, std::min(kPanelRows, nEnd - n), panel);
    return;
  }
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<1>(a, n);
}

} // namespace folio::cpu::detail
