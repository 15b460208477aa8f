//===- GemmInt4X8Avx512.cpp - int4 weights times int8 x, VNNI GEMM --------===//
//
// Prefill and batches for int4 weights that allow int8 x on CPUs with
// AVX512-VNNI where the AMX-INT8 GEMM does not run (no AMX, as on AMD Zen
// 4). Without it such a prefill widened every code to f32 into a panel and
// ran an f32 FMA GEMM: 16 multiply-adds per instruction. Here the codes
// stay bytes and x stays int8 (the same codes, steps and group sums as the
// GEMV, Gemv.h): 32 weight rows' codes are put in a panel once
// (Int4X8Panel.h, one dword of 16 columns per vector), and each vpdpbusd
// adds 4 products for 16 columns of one x row, with x's dword broadcast:
// 64 multiply-adds per instruction. A group's int32 sums are exact; after
// each group they are scaled by the weight's group scale times x's step
// into f32 accumulators, and the group minimum times x's group sum is
// added, as the GEMV and the AMX-INT8 GEMM do (in another order, so the
// results are not the GEMV's bit for bit).
//
// Measured on an Intel Xeon with AMX ruled out (FOLIO_CPU_AMX=0), 1
// thread, folio-linear-bench prefill (M = 512, the 110M shapes): 250-340
// GFLOP/s for groups of 128, 64 and 32, against 117-129 for the f32 panel;
// verify mode (one token's int4 linears, groups of 128 / 64): 14.8 / 17.5
// ms at M = 12 and 18.6 / 19.8 at M = 16, against 17.3 / 22.1 and 23.0 /
// 30.2 on the GEMV, and about even at M = 8, so it takes over above
// kConvertTileRows.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/Int4X8Panel.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

constexpr int64_t kCols = kInt4X8PanelCols;

/// Rows of x per tile.
constexpr int kTileRows = 6;

/// y rows m .. m + MR times the panel's columns n .. n + cols: per group,
/// the int32 sums of its dwords, then into the f32 accumulators. scale and
/// min are the panel's, [groups][32].
template <int MR>
FOLIO_AVX512_VNNI void rowsTile(const GemvInt4Args &a, const uint8_t *panel,
                                const float *scale, const float *min, int64_t n,
                                int64_t cols, int64_t m) {
  const int64_t groups = int4Groups(a.k, a.groupSize);
  const int64_t perGroup = a.groupSize / 4; // dwords
  const int8_t *x[MR];
  for (int r = 0; r < MR; ++r)
    x[r] = a.xq + (m + r) * a.xqRow;
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m512i s[MR][2];
    for (int r = 0; r < MR; ++r)
      s[r][0] = s[r][1] = _mm512_setzero_si512();
    for (int64_t d = g * perGroup; d < (g + 1) * perGroup; ++d) {
      const __m512i w0 = _mm512_load_si512(panel + int4X8PanelOffset(d, 0));
      const __m512i w1 = _mm512_load_si512(panel + int4X8PanelOffset(d, 1));
      for (int r = 0; r < MR; ++r) {
        const __m512i xb = broadcastDword(x[r] + 4 * d);
        s[r][0] = dpbusd(s[r][0], w0, xb);
        s[r][1] = dpbusd(s[r][1], w1, xb);
      }
    }
    const __m512 sc0 = _mm512_load_ps(scale + g * kCols);
    const __m512 sc1 = _mm512_load_ps(scale + g * kCols + 16);
    const __m512 mn0 = _mm512_load_ps(min + g * kCols);
    const __m512 mn1 = _mm512_load_ps(min + g * kCols + 16);
    for (int r = 0; r < MR; ++r) {
      const __m512 step = _mm512_set1_ps(int4X8Step(a, m + r, g));
      const __m512 sum =
          _mm512_set1_ps(a.xSums[(m + r) * a.xSumRow + 2 * g + 1]);
      acc[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][0]),
                                  _mm512_mul_ps(sc0, step), acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][1]),
                                  _mm512_mul_ps(sc1, step), acc[r][1]);
      acc[r][0] = _mm512_fmadd_ps(mn0, sum, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(mn1, sum, acc[r][1]);
    }
  }
  for (int h = 0; h < 2; ++h) {
    const int64_t left = cols - 16 * h;
    if (left <= 0)
      break;
    const __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
    const __m512 bias = a.bias ? _mm512_maskz_loadu_ps(msk, a.bias + n + 16 * h)
                               : _mm512_setzero_ps();
    for (int r = 0; r < MR; ++r)
      _mm512_mask_storeu_ps(a.y + (m + r) * a.n + n + 16 * h, msk,
                            _mm512_add_ps(acc[r][h], bias));
  }
}

} // namespace

FOLIO_AVX512_VNNI void gemmInt4X8Avx512(const GemvInt4Args &a, int64_t nBegin,
                                        int64_t nEnd) {
  // Per worker thread: the panel (64-byte aligned) and its scales and mins.
  thread_local std::vector<uint8_t> panelStorage;
  thread_local std::vector<float> params;
  const int64_t steps = int4RowBytes(a.k) / 32; // 16 dwords of x each
  const int64_t groups = int4Groups(a.k, a.groupSize);
  uint8_t *panel =
      alignedScratch(panelStorage, size_t(steps * 2 * kInt4X8StepBytes));
  float *scale = alignedScratch(params, size_t(groups * 2 * kCols));
  float *min = scale + groups * kCols;
  for (int64_t n = nBegin; n < nEnd; n += kCols) {
    const int64_t cols = std::min(kCols, nEnd - n);
    fillInt4X8Panel(a, n, cols, panel);
    fillInt4X8Params(a, n, cols, scale, min);
    forEachRowTile<kTileRows>(0, a.m, [&](auto rows, int64_t m) {
      rowsTile<decltype(rows)::value>(a, panel, scale, min, n, cols, m);
    });
  }
}

FOLIO_AVX512_VNNI void prepareXForInt4X8Gemm(Int4X8Buffers &xq, int64_t m,
                                             int64_t groupSize) {
  regroupInt4X8(xq, m, groupSize);
}

} // namespace folio::cpu::detail
