//===- Int4X8Layout.h - x's int8 copy for the int4 GEMVs --------*- C++ -*-===//
//
// Internal. The parts of quantizeXForInt4* (Gemv.h) that do not depend on
// the instruction set, shared by its AVX-512 and AVX2 versions: from one
// 128-element block's per-chunk |x| maxima and sums, the quantization step
// of each chunk and the group sums; and the interleave of a block half's
// int8 codes into the order the int4 kernels' lanes read
// (GemvInt4X8Avx512.cpp says why). Plain C++ and SSE2, so that each ISA's
// function inlines them.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_INT4X8LAYOUT_H
#define FOLIO_CODEGEN_CPU_INT4X8LAYOUT_H

#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/WeightPack.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstdint>

namespace folio::cpu::detail {

/// Block `blk` of a row with int4 groups of `g` (32, 64 or 128): from the
/// largest |x| and the sum of each of its four 32-element chunks, writes
/// each chunk's multiplier `inv` (127 / |x|max of its group within the
/// block, 0 for an all-zero group) and step `xs` (|x|max / 127), and each
/// group's sum at sums[2 * group + 1] (within sumLength).
inline void int4X8BlockSteps(const float amax[4], const float sum[4], int64_t g,
                             int64_t blk, float inv[4], float xs[4],
                             float *sums, int64_t sumLength) {
  const int perGroup = int(std::min<int64_t>(g, kInt4Block) / 32);
  for (int b = 0; b < 4; b += perGroup) {
    float a = amax[b], s = sum[b];
    for (int c = 1; c < perGroup; ++c) {
      a = std::max(a, amax[b + c]);
      s += sum[b + c];
    }
    const int64_t group = (blk * kInt4Block + 32 * b) / g;
    if (2 * group + 1 < sumLength)
      sums[2 * group + 1] = s;
    for (int c = 0; c < perGroup; ++c) {
      xs[b + c] = a / 127.0f;
      inv[b + c] = a > 0.0f ? 127.0f / a : 0.0f;
    }
  }
}

/// Writes the 16 int8 codes of each chunk's first (or last) 16 elements,
/// q[b] for chunk b, as the 64 bytes of that block half: with groups of
/// 128 (`byLane`) 32-bit lane l holds byte l of chunks 0..3; with smaller
/// groups lane 4c + b holds bytes 4c..4c+3 of chunk b.
inline void int4X8Interleave(const __m128i q[4], bool byLane, int8_t *dst) {
  __m128i out[4];
  if (byLane) {
    __m128i t0 = _mm_unpacklo_epi8(q[0], q[1]);
    __m128i t1 = _mm_unpackhi_epi8(q[0], q[1]);
    __m128i t2 = _mm_unpacklo_epi8(q[2], q[3]);
    __m128i t3 = _mm_unpackhi_epi8(q[2], q[3]);
    out[0] = _mm_unpacklo_epi16(t0, t2);
    out[1] = _mm_unpackhi_epi16(t0, t2);
    out[2] = _mm_unpacklo_epi16(t1, t3);
    out[3] = _mm_unpackhi_epi16(t1, t3);
  } else {
    __m128i t0 = _mm_unpacklo_epi32(q[0], q[1]);
    __m128i t1 = _mm_unpackhi_epi32(q[0], q[1]);
    __m128i t2 = _mm_unpacklo_epi32(q[2], q[3]);
    __m128i t3 = _mm_unpackhi_epi32(q[2], q[3]);
    out[0] = _mm_unpacklo_epi64(t0, t2);
    out[1] = _mm_unpackhi_epi64(t0, t2);
    out[2] = _mm_unpacklo_epi64(t1, t3);
    out[3] = _mm_unpackhi_epi64(t1, t3);
  }
  for (int c = 0; c < 4; ++c)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + 16 * c), out[c]);
}

/// One ISA's quantizer of one row of x (k elements, groups of g) into its
/// codes, block steps and group sums (sumLength floats, zeroed first).
using Int4X8RowFn = void (*)(const float *x, int64_t k, int64_t g, int8_t *xq,
                             float *steps, float *sums, int64_t sumLength);

/// quantizeXForInt4*: sizes `out` for m rows of k elements with int4
/// groups of groupSize and quantizes each row with `row`.
inline void int4X8QuantizeRows(const float *x, int64_t m, int64_t k,
                               int64_t groupSize, Int4X8Buffers &out,
                               Int4X8RowFn row) {
  out.xqRow = int4RowBytes(k) * 2;
  out.xScaleRow = int4RowBytes(k) / (kInt4Block / 2) * 16;
  out.xSumRow = (int4Groups(k, groupSize) + 7) / 8 * 16;
  out.xq.resize(size_t(m * out.xqRow));
  out.xScales.resize(size_t(m * out.xScaleRow));
  out.xSums.resize(size_t(m * out.xSumRow));
  for (int64_t r = 0; r < m; ++r)
    row(x + r * k, k, groupSize, out.xq.data() + r * out.xqRow,
        out.xScales.data() + r * out.xScaleRow,
        out.xSums.data() + r * out.xSumRow, out.xSumRow);
}

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_INT4X8LAYOUT_H
