//===- GemmInt8X16Avx512.cpp - int8 weights times int16 x, VNNI GEMM ------===//
//
// Prefill and batches of int8 weights on AVX-512 hosts where no bf16 GEMM
// runs (no AMX, as on AMD Zen 4). The GEMV's x codes (16-bit fixed point
// per row, quantizeXInt16*) and the weight codes widened to int16 are
// multiplied pairwise into int32 lanes, so every sum is exact and each
// output is the GEMV's bits (int8GemvOutput over the same int64 sum) at
// every M: prefill, decode and verification compute the same function.
//
// Before, such a prefill widened 32 weight rows to an f32 panel and ran an
// f32 FMA micro-kernel, 16 multiply-adds per instruction. Here the 32 rows'
// codes are widened once to an int16 panel, pair-interleaved (for code
// pair p, 32 dwords: row r's codes 2p and 2p + 1), half the f32 panel's
// size; each vpdpwssd (or vpmaddwd and vpaddd without VNNI) adds two
// products for 16 rows with x's dword broadcast: 32 multiply-adds per
// instruction. A lane adds two products of at most 127 x 32767 per pair,
// so 256 pairs stay below 2^31 before the lanes go into int64 sums.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// Weight rows per panel: two vectors of int32 lanes.
constexpr int64_t kCols = 32;

/// Code pairs summed in int32 before the lanes go into int64:
/// 256 x 2 x 127 x 32767 < 2^31.
constexpr int64_t kChunkPairs = 256;

/// Writes the int16 panel of weight rows [n, n + rows) (rows <= kCols),
/// zero past the last row: panel[p * kCols + r] holds row r's codes 2p
/// (low half) and 2p + 1, zero past K. 16 rows by 16 pairs at a time are
/// widened and transposed in registers as 32-bit lanes.
FOLIO_AVX512 void fillPanel(const GemvInt8Args &a, int64_t n, int64_t rows,
                            int64_t pairs, int32_t *panel) {
  for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
    const int64_t left = a.k - 2 * p0;
    const __mmask32 msk =
        left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
    const int64_t np = std::min<int64_t>(16, pairs - p0);
    for (int64_t h = 0; h < 2; ++h) {
      __m512 t[16];
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t r = 16 * h + i;
        t[i] = r < rows ? _mm512_castsi512_ps(
                              _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(
                                  msk, a.w + (n + r) * a.k + 2 * p0)))
                        : _mm512_setzero_ps();
      }
      transpose16(t);
      for (int64_t j = 0; j < np; ++j)
        _mm512_store_si512(panel + (p0 + j) * kCols + 16 * h,
                           _mm512_castps_si512(t[j]));
    }
  }
}

/// Adds the 16 int32 lanes of v to s[0 .. 16] (int64).
FOLIO_AVX512 inline void addToSums(__m512i v, int64_t *s) {
  __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v));
  __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1));
  _mm512_store_si512(s, _mm512_add_epi64(_mm512_load_si512(s), lo));
  _mm512_store_si512(s + 8, _mm512_add_epi64(_mm512_load_si512(s + 8), hi));
}

/// xOut[m, :] . outliers[n, :] (bf16).
FOLIO_AVX512 inline float outlierDot(const GemvInt8Args &a, int64_t n,
                                     int64_t m) {
  return dotBf16(a.outliers + n * a.numOutliers, a.xOut + m * a.numOutliers,
                 a.numOutliers);
}

/// y rows m .. m + MR times the panel's columns n .. n + cols.
template <int MR, bool Vnni>
FOLIO_AVX512_VNNI void rowsTile(const GemvInt8Args &a, const int32_t *panel,
                                int64_t pairs, int64_t n, int64_t cols,
                                int64_t m) {
  alignas(64) int64_t sums[MR][kCols] = {};
  const int16_t *x[MR];
  for (int j = 0; j < MR; ++j)
    x[j] = a.xq + (m + j) * a.kPadded;
  for (int64_t p0 = 0; p0 < pairs; p0 += kChunkPairs) {
    const int64_t p1 = std::min(pairs, p0 + kChunkPairs);
    __m512i acc[MR][2];
    for (int j = 0; j < MR; ++j)
      acc[j][0] = acc[j][1] = _mm512_setzero_si512();
    for (int64_t p = p0; p < p1; ++p) {
      const __m512i w0 = _mm512_load_si512(panel + p * kCols);
      const __m512i w1 = _mm512_load_si512(panel + p * kCols + 16);
      for (int j = 0; j < MR; ++j) {
        const __m512i xb = broadcastDword(x[j] + 2 * p); // codes 2p, 2p + 1
        acc[j][0] = dotPairs<Vnni>(acc[j][0], w0, xb);
        acc[j][1] = dotPairs<Vnni>(acc[j][1], w1, xb);
      }
    }
    for (int j = 0; j < MR; ++j) {
      addToSums(acc[j][0], sums[j]);
      addToSums(acc[j][1], sums[j] + 16);
    }
  }
  // int8GemvOutput's expression and order, 16 outputs at a time, so the
  // bits are the GEMV's (vcvtqq2ps rounds as the scalar conversion does).
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t left = cols - 16 * h;
    if (left <= 0)
      break;
    const __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
    const __m512 scale = _mm512_maskz_loadu_ps(msk, a.scales + n + 16 * h);
    const __m512 bias = a.bias ? _mm512_maskz_loadu_ps(msk, a.bias + n + 16 * h)
                               : _mm512_setzero_ps();
    for (int j = 0; j < MR; ++j) {
      const int64_t *s = sums[j] + 16 * h;
      const __m512 sum = _mm512_insertf32x8(
          _mm512_castps256_ps512(_mm512_cvtepi64_ps(_mm512_load_si512(s))),
          _mm512_cvtepi64_ps(_mm512_load_si512(s + 8)), 1);
      alignas(64) float out[16] = {};
      if (a.numOutliers)
        for (int64_t c = 0; c < std::min<int64_t>(left, 16); ++c)
          out[c] = outlierDot(a, n + 16 * h + c, m + j);
      const __m512 y = _mm512_add_ps(
          _mm512_add_ps(
              _mm512_mul_ps(_mm512_mul_ps(sum, _mm512_set1_ps(a.xSteps[m + j])),
                            scale),
              _mm512_load_ps(out)),
          bias);
      _mm512_mask_storeu_ps(a.y + (m + j) * a.n + n + 16 * h, msk, y);
    }
  }
}

/// Rows of x per tile: 2 x kTileRows int32 accumulators, the two panel
/// vectors and a broadcast fit the 32 vector registers.
constexpr int kTileRows = 6;

template <bool Vnni>
FOLIO_AVX512_VNNI void gemm(const GemvInt8Args &a, int64_t nBegin,
                            int64_t nEnd) {
  // Per worker thread: the panel, 64-byte aligned.
  thread_local std::vector<int32_t> storage;
  const int64_t pairs = (a.k + 1) / 2;
  int32_t *panel = alignedScratch(storage, size_t(pairs * kCols));
  for (int64_t n = nBegin; n < nEnd; n += kCols) {
    const int64_t cols = std::min(kCols, nEnd - n);
    fillPanel(a, n, cols, pairs, panel);
    forEachRowTile<kTileRows>(0, a.m, [&](auto rows, int64_t m) {
      rowsTile<decltype(rows)::value, Vnni>(a, panel, pairs, n, cols, m);
    });
  }
}

} // namespace

void gemmInt8X16Avx512(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  if (hostFeatures().avx512vnni)
    return gemm<true>(a, nBegin, nEnd);
  gemm<false>(a, nBegin, nEnd);
}

void gemmInt8X16Avx512Madd(const GemvInt8Args &a, int64_t nBegin,
                           int64_t nEnd) {
  gemm<false>(a, nBegin, nEnd);
}

} // namespace folio::cpu::detail
