//===- GemmAmxInt4X8.cpp - int4 weights times int8 x on AMX-INT8 ----------===//
//
// Prefill and batches (more rows than kConvertTileRows) for int4 weights
// in groups of 128 that allow int8 x (it takes groups of 64 too, but
// linear() gives those to the VNNI GEMM, which beats it there: one K step
// per group makes the C tiles' stores dominate): the integer sums of
// GemvInt4X8Avx512.cpp, on tiles. A tile product sums a whole tile row of
// K (64 bytes), in any order as long as x and the weights agree; in the x
// layout of quantizeXForInt4Avx512 for groups of 128 (Int4X8Layout.h),
// byte 4l + b of a block half is x[32b + l] (+16 for the odd half), which
// is exactly
// where `v & 15` (`(v >> 4) & 15`) puts the code of that weight in the
// block's 64 bytes. So each block half is one K step: A is 16 rows of x's
// half, B is 16 columns' masked bytes transposed as 16 x 16 dwords (row p
// holds each column's bytes 4p..4p+3), and tdpbsud (signed x, unsigned
// codes) adds the 64 products. A group is one block, so after its two
// steps the int32 tile holds each (row, column)'s group sum exactly; the
// epilogue adds it times the weight's group scale times x's step to an
// f32 accumulator, and x's group sum times the group minimum, as the GEMV
// does. With groups of 64, x's lanes hold chunk b's bytes in dwords
// 4c + b (the transposed layout), so one vpermt2d per group gathers a
// group's 16 dwords of both halves into one 64-byte K step, for x once
// per call and for each column's transposed codes in the panel
// (Int4X8Panel.h, shared with the VNNI GEMM). Groups of 32 would need
// 32-byte tile rows; they keep the bf16 GEMM.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/GemmAmx.h"
#include "codegen/CPU/Int4X8Panel.h"

#include "codegen/CPU/AmxTiles.h"
#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::amx;
using namespace folio::cpu::avx512;

constexpr int64_t kCols = kInt4X8PanelCols;
constexpr int64_t kTileBytes = kInt4X8StepBytes;

/// C tiles 0, 1 (2, 3 with TwoA) = x rows m .. m + 15 (+ 16 .. 31) times
/// K steps [step, step + steps) (one group), stored to c[32][32] int32.
template <bool TwoA>
FOLIO_AMX_INT8 void multiplyGroup(const GemvInt4Args &a, const uint8_t *panel,
                                  int64_t m, int64_t step, int64_t steps,
                                  int32_t *c) {
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (TwoA) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t s = step; s < step + steps; ++s) {
    const int8_t *x0 = a.xq + m * a.xqRow + s * 64;
    const uint8_t *b = panel + s * 2 * kTileBytes;
    TLOAD(6, b, 64);
    TLOAD(7, b + kTileBytes, 64);
    TLOAD(4, x0, a.xqRow);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    if constexpr (TwoA) {
      TLOAD(5, x0 + 16 * a.xqRow, a.xqRow);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
    }
  }
  TSTORE(0, c, 128);
  TSTORE(1, c + 16, 128);
  if constexpr (TwoA) {
    TSTORE(2, c + 16 * 32, 128);
    TSTORE(3, c + 16 * 32 + 16, 128);
  }
}

/// y rows m .. m + rows times columns n .. n + cols: every group's tile
/// sums into c (groups x 32 x 32 int32), then per row and 16 columns one
/// pass over the groups, adding c x scale x step and min x sum(x) in
/// registers. scale and min are the panel's, [groups][32].
template <bool TwoA>
FOLIO_AMX_INT8 void multiply(const GemvInt4Args &a, const uint8_t *panel,
                             const float *scale, const float *min, int32_t *c,
                             int64_t n, int64_t cols, int64_t m, int64_t rows) {
  const int64_t groups = int4Groups(a.k, a.groupSize);
  const int64_t stepsPerGroup = a.groupSize / 64;
  for (int64_t g = 0; g < groups; ++g)
    multiplyGroup<TwoA>(a, panel, m, g * stepsPerGroup, stepsPerGroup,
                        c + g * 32 * 32);
  for (int64_t i = 0; i < rows; ++i) {
    const float *sum = a.xSums + (m + i) * a.xSumRow;
    for (int h = 0; h < 2; ++h) {
      const int64_t left = cols - 16 * h;
      if (left <= 0)
        break;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t at = g * 32 + 16 * h;
        const float step = int4X8Step(a, m + i, g);
        acc = _mm512_fmadd_ps(
            _mm512_cvtepi32_ps(
                _mm512_load_si512(c + g * 32 * 32 + i * 32 + 16 * h)),
            _mm512_mul_ps(_mm512_load_ps(scale + at), _mm512_set1_ps(step)),
            acc);
        acc = _mm512_fmadd_ps(_mm512_load_ps(min + at),
                              _mm512_set1_ps(sum[2 * g + 1]), acc);
      }
      const __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
      const __m512 bias = a.bias
                              ? _mm512_maskz_loadu_ps(msk, a.bias + n + 16 * h)
                              : _mm512_setzero_ps();
      _mm512_mask_storeu_ps(a.y + (m + i) * a.n + n + 16 * h, msk,
                            _mm512_add_ps(acc, bias));
    }
  }
}

} // namespace

FOLIO_AMX_INT8 void prepareXForAmxInt4X8(Int4X8Buffers &xq, int64_t m,
                                         int64_t groupSize) {
  const size_t rows = size_t((m + 15) / 16 * 16);
  xq.xq.resize(rows * size_t(xq.xqRow));
  std::fill(xq.xq.begin() + m * xq.xqRow, xq.xq.end(), 0);
  regroupInt4X8(xq, m, groupSize);
}

FOLIO_AMX_INT8 void gemmAmxInt4X8(const GemvInt4Args &a, int64_t nBegin,
                                  int64_t nEnd) {
  // Per worker thread: the panel (64-byte aligned for the tile loads), the
  // tile sums of every group, and the panel's scales and mins.
  thread_local std::vector<uint8_t> panelStorage;
  thread_local std::vector<int32_t> sums;
  thread_local std::vector<float> params;
  const int64_t blocks = int4RowBytes(a.k) / 64;
  const int64_t groups = int4Groups(a.k, a.groupSize);
  panelStorage.resize(size_t(blocks * 4 * kTileBytes + 64));
  sums.resize(size_t(groups * 32 * 32 + 16));
  params.resize(size_t(groups * 2 * kCols + 16));
  uint8_t *panel = reinterpret_cast<uint8_t *>(
      (reinterpret_cast<uintptr_t>(panelStorage.data()) + 63) & ~uintptr_t(63));
  int32_t *c = reinterpret_cast<int32_t *>(
      (reinterpret_cast<uintptr_t>(sums.data()) + 63) & ~uintptr_t(63));
  float *scale = reinterpret_cast<float *>(
      (reinterpret_cast<uintptr_t>(params.data()) + 63) & ~uintptr_t(63));
  float *min = scale + groups * kCols;
  static const TileConfig config;
  compilerBarrier();
  _tile_loadconfig(&config);
  for (int64_t n = nBegin; n < nEnd; n += kCols) {
    const int64_t cols = std::min(kCols, nEnd - n);
    fillInt4X8Panel(a, n, cols, panel);
    fillInt4X8Params(a, n, cols, scale, min);
    int64_t m = 0;
    for (; a.m - m > 16; m += 32)
      multiply<true>(a, panel, scale, min, c, n, cols, m,
                     std::min<int64_t>(32, a.m - m));
    if (m < a.m)
      multiply<false>(a, panel, scale, min, c, n, cols, m, a.m - m);
  }
  _tile_release();
  compilerBarrier();
}

} // namespace folio::cpu::detail
