//===- GemvInt4X8Avx2.cpp - int4 weights times int8 x with AVX2 -----------===//
//
// GemvInt4X8Avx512.cpp's kernel for CPUs with AVX2 and no AVX512-VNNI: the
// same x layout (Int4X8Layout.h) and the same integer sums, each 256-bit
// half of a 128-weight block at a time. Without vpdpbusd, vpmaddubsw
// multiplies the unsigned codes with the signed x and adds neighbouring
// pairs into 16 bits (at most 2 x 15 x 127 per pair, and the even and odd
// nibbles' pairs added together at most twice that: no saturation), and
// vpmaddwd by ones adds those pairs into the 32-bit lanes' four products.
// The AVX2 f32-x kernel (GemvInt4Avx2.cpp) takes five ops per 8 weights;
// this one about twelve per 64.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/Int4X8Layout.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

/// Byte t' of each 128-bit lane takes byte ctrl[t'] (a 4 x 4 transpose).
FOLIO_AVX2 inline __m256i transposeBytes4x4(__m256i v) {
  const __m256i ctrl =
      _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0,
                       4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm256_shuffle_epi8(v, ctrl);
}

/// The first `count` (<= 4) f16 (scale, min) pairs at p, zeros after, in
/// one masked load (not a copy through the stack, whose 16-bit stores the
/// vector load could not forward: a stall per block and row).
FOLIO_AVX2 inline __m128i loadPairs(const uint16_t *p, int count) {
  const __m128i mask =
      _mm_cmpgt_epi32(_mm_set1_epi32(count), _mm_setr_epi32(0, 1, 2, 3));
  return _mm_maskload_epi32(reinterpret_cast<const int *>(p), mask);
}

/// 16 floats (two vectors) rounded to the nearest int8 after scaling by
/// `inv`, in order.
FOLIO_AVX2 inline __m128i quantize16(__m256 lo, __m256 hi, float inv) {
  const __m256 s = _mm256_set1_ps(inv);
  __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(lo, s));
  __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(hi, s));
  // packs works within 128-bit lanes: a0-3 b0-3 | a4-7 b4-7, reordered.
  __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
  return _mm_packs_epi16(_mm256_castsi256_si128(w),
                         _mm256_extracti128_si256(w, 1));
}

FOLIO_AVX2 inline float reduceMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

/// One row of x: see quantizeXForInt4Avx2 in Gemv.h.
FOLIO_AVX2 void quantizeRow(const float *x, int64_t k, int64_t g, int8_t *xq,
                            float *scales, float *sums, int64_t sumLength) {
  std::fill(sums, sums + sumLength, 0.0f);
  const int64_t blocks = int4RowBytes(k) / (kInt4Block / 2);
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t base = blk * kInt4Block;
    __m256 v[16];
    float amax[4], sum[4], inv[4], xs[4];
    for (int j = 0; j < 16; ++j) {
      const int64_t left = k - base - 8 * j;
      v[j] = left >= 8   ? _mm256_loadu_ps(x + base + 8 * j)
             : left <= 0 ? _mm256_setzero_ps()
                         : loadTail(x + base + 8 * j, left);
    }
    for (int b = 0; b < 4; ++b) {
      __m256 m = _mm256_and_ps(v[4 * b], absMask), s = v[4 * b];
      for (int j = 1; j < 4; ++j) {
        m = _mm256_max_ps(m, _mm256_and_ps(v[4 * b + j], absMask));
        s = _mm256_add_ps(s, v[4 * b + j]);
      }
      amax[b] = reduceMax(m);
      sum[b] = reduceAdd(s);
    }
    int4X8BlockSteps(amax, sum, g, blk, inv, xs, sums, sumLength);
    const __m256 steps =
        _mm256_setr_ps(xs[0], xs[1], xs[2], xs[3], xs[0], xs[1], xs[2], xs[3]);
    _mm256_storeu_ps(scales + blk * 16, steps);
    _mm256_storeu_ps(scales + blk * 16 + 8, steps);
    for (int half = 0; half < 2; ++half) {
      __m128i q[4];
      for (int b = 0; b < 4; ++b)
        q[b] = quantize16(v[4 * b + 2 * half], v[4 * b + 2 * half + 1], inv[b]);
      int4X8Interleave(q, g >= kInt4Block,
                       xq + blk * kInt4Block + half * (kInt4Block / 2));
    }
  }
}

/// The weight scales of block `blk` of a row for either half (lane 4c + b
/// has chunk b's group scale); groups past the row read as 0.
template <int G>
FOLIO_AVX2 inline __m256 weightScales(const uint16_t *row, int64_t blk,
                                      int64_t groups) {
  if constexpr (G == 128) {
    return _mm256_cvtph_ps(_mm_set1_epi16(short(row[2 * blk])));
  } else {
    constexpr int kPerBlock = kInt4Block / G;
    const int64_t g0 = blk * kPerBlock;
    const int count = int(std::min<int64_t>(kPerBlock, groups - g0));
    // (scale, min) pairs: group j's scale is float 2j.
    const __m256i idx = G == 32 ? _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)
                                : _mm256_setr_epi32(0, 0, 2, 2, 0, 0, 2, 2);
    return _mm256_permutevar8x32_ps(
        _mm256_cvtph_ps(loadPairs(row + 2 * g0, count)), idx);
  }
}

/// NR weight rows by MR x rows from output row n and x row m; x is loaded
/// where it is used (L1).
template <int NR, int MR, int G>
FOLIO_AVX2 void tile(const GemvInt4Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, rowBytes = int4RowBytes(k);
  const int64_t groups = int4Groups(k, a.groupSize);
  const int64_t blocks = rowBytes / (kInt4Block / 2);
  const uint8_t *w = a.w + n * rowBytes;
  const uint8_t *next = w + NR * rowBytes;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int r = 0; r < MR; ++r)
      acc[i][r] = _mm256_setzero_ps();
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t off = blk * (kInt4Block / 2);
    if (prefetch)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * rowBytes + off),
                     _MM_HINT_T0);
    for (int i = 0; i < NR; ++i) {
      const __m256 ws =
          weightScales<G>(a.params + (n + i) * groups * 2, blk, groups);
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(
            reinterpret_cast<const __m256i *>(w + i * rowBytes + off) + h);
        __m256i even = _mm256_and_si256(v, nibble);
        __m256i odd = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
        if constexpr (G < 128) {
          even = transposeBytes4x4(even);
          odd = transposeBytes4x4(odd);
        }
        for (int r = 0; r < MR; ++r) {
          const int8_t *xb = a.xq + (m + r) * a.xqRow + 2 * off + 32 * h;
          const __m256i pairs = _mm256_add_epi16(
              _mm256_maddubs_epi16(
                  even,
                  _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xb))),
              _mm256_maddubs_epi16(
                  odd, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                           xb + kInt4Block / 2))));
          const __m256 xs = _mm256_loadu_ps(a.xScales + (m + r) * a.xScaleRow +
                                            blk * 16 + 8 * h);
          acc[i][r] = _mm256_fmadd_ps(
              _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones)),
              _mm256_mul_ps(ws, xs), acc[i][r]);
        }
      }
    }
  }
  // min x sum(x) per group: (scale, min) pairs times (0, sum) pairs, four
  // groups a vector.
  __m256 mins[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int r = 0; r < MR; ++r)
      mins[i][r] = _mm256_setzero_ps();
  for (int64_t g0 = 0; g0 < groups; g0 += 4) {
    const int64_t count = std::min<int64_t>(4, groups - g0);
    for (int i = 0; i < NR; ++i) {
      const __m256 pv = _mm256_cvtph_ps(
          loadPairs(a.params + ((n + i) * groups + g0) * 2, int(count)));
      for (int r = 0; r < MR; ++r)
        mins[i][r] = _mm256_fmadd_ps(
            pv, _mm256_loadu_ps(a.xSums + (m + r) * a.xSumRow + 2 * g0),
            mins[i][r]);
    }
  }
  for (int i = 0; i < NR; ++i) {
    const float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int r = 0; r < MR; ++r)
      a.y[(m + r) * a.n + n + i] =
          reduceAdd(acc[i][r]) + reduceAdd(mins[i][r]) + b;
  }
}

template <int NR, int G>
FOLIO_AVX2 void rowsOfX(const GemvInt4Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 2 <= a.m; m += 2)
    tile<NR, 2, G>(a, n, m);
  if (m < a.m)
    tile<NR, 1, G>(a, n, m);
}

template <int G>
FOLIO_AVX2 void gemvRows(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m == 1) {
    for (; n + 4 <= nEnd; n += 4)
      rowsOfX<4, G>(a, n);
  } else {
    for (; n + 2 <= nEnd; n += 2)
      rowsOfX<2, G>(a, n);
  }
  for (; n < nEnd; ++n)
    rowsOfX<1, G>(a, n);
}

} // namespace

void quantizeXForInt4Avx2(const float *x, int64_t m, int64_t k,
                          int64_t groupSize, Int4X8Buffers &out) {
  int4X8QuantizeRows(x, m, k, groupSize, out, quantizeRow);
}

void gemvInt4X8Avx2(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
  switch (a.groupSize) {
  case 32:
    return gemvRows<32>(a, nBegin, nEnd);
  case 64:
    return gemvRows<64>(a, nBegin, nEnd);
  default:
    return gemvRows<128>(a, nBegin, nEnd);
  }
}

} // namespace folio::cpu::detail
