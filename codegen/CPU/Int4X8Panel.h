//===- Int4X8Panel.h - int4 codes and int8 x in group order -----*- C++ -*-===//
//
// Internal: what the GEMMs of int4 weights times int8 x share (the AMX-INT8
// one and the AVX512-VNNI one). Both sum one weight group at a time, so
// they want each group's codes, and x's, in consecutive dwords. x comes
// from quantizeXForInt4Avx512 in the GEMV's lane order (Gemv.h,
// GemvInt4X8Avx512.cpp): per 128-weight block, the even nibbles' 64 bytes
// then the odd ones', and with groups of 32 or 64 dword 4c + b of a half
// holds chunk b's elements 4c .. 4c + 3 of that half. regroupInt4X8 puts
// each group's dwords together (groups of 128 already are: the block is
// the group), and fillInt4X8Panel writes 32 weight rows' codes in the same
// dword order, transposed so that one 64-byte row holds one dword of 16
// columns. Include only from translation units whose AVX-512 code runs
// after a runtime check; every function carries the target attribute.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_INT4X8PANEL_H
#define FOLIO_CODEGEN_CPU_INT4X8PANEL_H

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>
#include <cstdint>

namespace folio::cpu::detail {

/// Output columns per panel: two vectors (two AMX B tiles).
constexpr int64_t kInt4X8PanelCols = 32;
/// Bytes of one panel step: 16 dwords of K (64 bytes of x) for 16 columns.
constexpr int64_t kInt4X8StepBytes = 1024;

/// Byte offset in a panel of dword `d` (of x's row, in group order) for
/// column half `t`: the 64 bytes there hold that dword of columns 16t ..
/// 16t + 15. Step s = d / 16 is two 1 KiB tiles (one per column half),
/// each 16 rows of 64 bytes.
inline int64_t int4X8PanelOffset(int64_t d, int t) {
  return ((d / 16 * 2 + t) * 16 + d % 16) * 64;
}

/// Vector `out` (0 or 1) of a block's 32 dwords in group order, from its
/// even and odd halves in lane order (groups of 32 or 64).
FOLIO_AVX512 static inline __m512i
int4X8GroupMajor(__m512i even, __m512i odd, int64_t groupSize, int out) {
  // Index i < 16 takes even's dword i, 16 + i odd's.
  if (groupSize == 64)
    return _mm512_permutex2var_epi32(
        even,
        out == 0 ? _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21,
                                     24, 25, 28, 29)
                 : _mm512_setr_epi32(2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23,
                                     26, 27, 30, 31),
        odd);
  return _mm512_permutex2var_epi32(
      even,
      out == 0 ? _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17,
                                   21, 25, 29)
               : _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15,
                                   19, 23, 27, 31),
      odd);
}

/// Puts each group's dwords of rows [0, m) of x's codes together (groups
/// of 32 or 64; nothing to do for 128).
FOLIO_AVX512 static inline void regroupInt4X8(Int4X8Buffers &xq, int64_t m,
                                              int64_t groupSize) {
  if (groupSize >= kInt4Block)
    return;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t at = 0; at < xq.xqRow; at += kInt4Block) {
      int8_t *p = xq.xq.data() + r * xq.xqRow + at;
      const __m512i even = _mm512_loadu_si512(p);
      const __m512i odd = _mm512_loadu_si512(p + 64);
      _mm512_storeu_si512(p, int4X8GroupMajor(even, odd, groupSize, 0));
      _mm512_storeu_si512(p + 64, int4X8GroupMajor(even, odd, groupSize, 1));
    }
}

/// x's quantization step for row r's group g: lane b0 of its block's
/// sixteen, b0 the group's first 32-weight chunk.
inline float int4X8Step(const GemvInt4Args &a, int64_t r, int64_t g) {
  const int64_t perBlock = kInt4Block / a.groupSize;
  return a.xScales[r * a.xScaleRow + g / perBlock * 16 +
                   g % perBlock * (4 / perBlock)];
}

/// Weight rows [n, n + cols) (cols <= 32; zero beyond) as a panel
/// (int4X8PanelOffset): each code a byte, in x's group order.
FOLIO_AVX512 static inline void fillInt4X8Panel(const GemvInt4Args &a,
                                                int64_t n, int64_t cols,
                                                uint8_t *panel) {
  const int64_t rowBytes = int4RowBytes(a.k), blocks = rowBytes / 64;
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int t = 0; t < 2; ++t) {
      __m512 step[2][16];
      for (int i = 0; i < 16; ++i) {
        const int64_t c = 16 * t + i;
        __m512i v =
            c < cols ? _mm512_loadu_si512(a.w + (n + c) * rowBytes + blk * 64)
                     : _mm512_setzero_si512();
        __m512i even = _mm512_and_si512(v, nibble);
        __m512i odd = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
        if (a.groupSize < kInt4Block) {
          even = avx512::transposeBytes4x4(even);
          odd = avx512::transposeBytes4x4(odd);
          const __m512i first = int4X8GroupMajor(even, odd, a.groupSize, 0);
          odd = int4X8GroupMajor(even, odd, a.groupSize, 1);
          even = first;
        }
        step[0][i] = _mm512_castsi512_ps(even);
        step[1][i] = _mm512_castsi512_ps(odd);
      }
      for (int h = 0; h < 2; ++h) {
        avx512::transpose16(step[h]);
        uint8_t *dst = panel + int4X8PanelOffset((blk * 2 + h) * 16, t);
        for (int p = 0; p < 16; ++p)
          _mm512_store_ps(reinterpret_cast<float *>(dst + 64 * p), step[h][p]);
      }
    }
}

/// The f16 (scale, min) pairs of weight rows [n, n + cols) widened into
/// scale[g * 32 + j] and min[g * 32 + j] for group g and column j, zero
/// for the columns past cols.
inline void fillInt4X8Params(const GemvInt4Args &a, int64_t n, int64_t cols,
                             float *scale, float *min) {
  const int64_t groups = int4Groups(a.k, a.groupSize);
  std::fill(scale, scale + groups * kInt4X8PanelCols, 0.0f);
  std::fill(min, min + groups * kInt4X8PanelCols, 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < cols; ++j) {
      const uint16_t *p = a.params + ((n + j) * groups + g) * 2;
      scale[g * kInt4X8PanelCols + j] = f16ToFloat(p[0]);
      min[g * kInt4X8PanelCols + j] = f16ToFloat(p[1]);
    }
}

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_INT4X8PANEL_H
