//===- GemvInt8Avx2.cpp - AVX2 int8-weight kernel -------------------------===//
//
// Weight-only int8 on AVX2, GemvInt8Avx512.cpp's design in 8 lanes. Decode
// and batches (M <= kInt8GemvMaxRowsAvx2) multiply the codes, widened 16 at a
// time to int16 (vpmovsxbw, the load folded in), with x's int16 codes
// (quantizeXInt16*, Gemv.h) by vpmaddwd into int32 lanes: exact integer
// sums, as every level computes them. Four weight rows (four streams, the
// next four prefetched once per line) by up to two x rows; further x rows
// take further passes over rows that are then in L1. Codes past the last
// whole 32 are summed in scalar code. Scales apply to the sums; outlier
// columns (bf16) are added after.
//
// Prefill (gemmInt8X16Avx2, M > kInt8GemvMaxRowsAvx2) is AVX-512's int16 GEMM
// (GemmInt8X16Avx512.cpp) in 256-bit vectors: the same x codes times the
// weight codes widened once to int16 on a panel of 16 weight rows,
// pair-interleaved (for code pair p, 16 dwords: row r's codes 2p and
// 2p + 1). Each vpmaddwd adds two products for 8 rows with x's dword
// broadcast, 16 multiply-adds where an f32 FMA does 8; a lane's int32 sum
// takes 256 pairs (2 x 256 x 127 x 32767 < 2^31) before it goes into an
// int64 sum, and the outputs are int8GemvOutput of those sums: the GEMV's
// bits at every M.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

#define FOLIO_UNROLL _Pragma("GCC unroll 8")

/// xOut[m, :] . outliers[n, :] (bf16).
FOLIO_AVX2 float outlierDot(const GemvInt8Args &a, int64_t n, int64_t m) {
  const uint16_t *o = a.outliers + n * a.numOutliers;
  const float *xo = a.xOut + m * a.numOutliers;
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= a.numOutliers; j += 8) {
    __m256i h = _mm256_cvtepu16_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(o + j)));
    acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)),
                          _mm256_loadu_ps(xo + j), acc);
  }
  float s = reduceAdd(acc);
  for (; j < a.numOutliers; ++j)
    s += xo[j] * bf16ToFloat(o[j]);
  return s;
}

/// Per-lane bound of the int32 accumulators: a lane takes 4 products per
/// 32 codes (two vpmaddwd of 16 pairs), each at most 127 x 32767 in
/// magnitude, so 4096 codes (512 products, < 2^31) are summed in int32
/// before the lanes go into the row's int64 sum.
constexpr int64_t kChunkCodes = 4096;

/// The 8 int32 lanes' exact sum.
FOLIO_AVX2 inline int64_t reduceAddI32(__m256i v) {
  __m256i s =
      _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                       _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
  __m128i h =
      _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

template <int NR, int MR>
FOLIO_AVX2 void tileX16(const GemvInt8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, kVec = k / 32 * 32;
  const int8_t *w = a.w + n * k;
  const int8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  int64_t sums[NR][MR] = {};
  for (int64_t c0 = 0; c0 < kVec; c0 += kChunkCodes) {
    const int64_t c1 = std::min(kVec, c0 + kChunkCodes);
    __m256i acc[NR][MR];
    FOLIO_UNROLL
    for (int i = 0; i < NR; ++i)
      FOLIO_UNROLL
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm256_setzero_si256();
    for (int64_t kk = c0; kk < c1; kk += 32) {
      if (prefetch && (kk & 63) == 0) {
        FOLIO_UNROLL
        for (int i = 0; i < NR; ++i)
          _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                       _MM_HINT_T0);
      }
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        const int8_t *p = w + i * k + kk;
        __m256i w0 = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
        __m256i w1 = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16)));
        FOLIO_UNROLL
        for (int j = 0; j < MR; ++j) {
          const int16_t *xq = a.xq + (m + j) * a.kPadded + kk;
          __m256i s0 = _mm256_madd_epi16(
              w0, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq)));
          __m256i s1 = _mm256_madd_epi16(
              w1,
              _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + 16)));
          acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_add_epi32(s0, s1));
        }
      }
    }
    FOLIO_UNROLL
    for (int i = 0; i < NR; ++i)
      FOLIO_UNROLL
    for (int j = 0; j < MR; ++j)
      sums[i][j] += reduceAddI32(acc[i][j]);
  }
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i) {
    const int8_t *row = w + i * k;
    float scale = a.scales[n + i];
    float b = a.bias ? a.bias[n + i] : 0.0f;
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      const int16_t *xq = a.xq + (m + j) * a.kPadded;
      int64_t s = sums[i][j];
      for (int64_t kk = kVec; kk < k; ++kk)
        s += int32_t(row[kk]) * int32_t(xq[kk]);
      a.y[(m + j) * a.n + n + i] =
          int8GemvOutput(s, a.xSteps[m + j], scale,
                         a.numOutliers ? outlierDot(a, n + i, m + j) : 0.0f, b);
    }
  }
}

template <int NR> FOLIO_AVX2 void rowsOfX(const GemvInt8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 2 <= a.m; m += 2)
    tileX16<NR, 2>(a, n, m);
  if (m < a.m)
    tileX16<NR, 1>(a, n, m);
}

/// quantizeXInt16Scalar's codes and steps, 16 elements at a time (the same
/// IEEE products; vcvtps2dq rounds to nearest even as nearbyint does).
FOLIO_AVX2 void quantizeRows(const float *x, int64_t m, int64_t k, int16_t *dst,
                             int64_t kPadded, float *steps) {
  const __m256 sign = _mm256_set1_ps(-0.0f), big = _mm256_set1_ps(FLT_MAX);
  const int64_t kVec = k / 8 * 8;
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * k;
    int16_t *codes = dst + r * kPadded;
    __m256 amaxV = _mm256_setzero_ps(), badV = _mm256_setzero_ps();
    for (int64_t c = 0; c < kVec; c += 8) {
      __m256 v = _mm256_andnot_ps(sign, _mm256_loadu_ps(row + c));
      badV = _mm256_or_ps(badV, _mm256_cmp_ps(v, big, _CMP_NLE_UQ));
      amaxV = _mm256_max_ps(amaxV, v);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, amaxV);
    float amax = 0;
    for (float l : lanes)
      amax = std::max(amax, l);
    bool bad = _mm256_movemask_ps(badV) != 0;
    for (int64_t c = kVec; c < k; ++c) {
      float v = std::fabs(row[c]);
      bad = bad || !(v <= FLT_MAX);
      amax = std::max(amax, v);
    }
    std::fill(codes + (bad ? 0 : k), codes + kPadded, int16_t(0));
    if (bad) {
      steps[r] = NAN;
      continue;
    }
    amax = std::max(amax, kInt8XAbsMaxFloor);
    const float invS = float(kInt8XCodeMax) / amax;
    const __m256 inv = _mm256_set1_ps(invS);
    steps[r] = amax / float(kInt8XCodeMax);
    int64_t c = 0;
    for (; c + 16 <= k; c += 16) {
      __m256i lo =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + c), inv));
      __m256i hi =
          _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + c + 8), inv));
      // packs interleaves the 128-bit halves; the permute restores order.
      _mm256_storeu_si256(
          reinterpret_cast<__m256i *>(codes + c),
          _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8));
    }
    for (; c < k; ++c)
      codes[c] = int16_t(std::nearbyint(row[c] * invS));
  }
}

/// Weight rows per panel: two vectors of int32 lanes.
constexpr int64_t kCols = 16;

/// Code pairs summed in int32 before the lanes go into int64.
constexpr int64_t kChunkPairs = 256;

/// Transposes 8 x 8 dwords: x[i] lane j becomes x[j] lane i.
FOLIO_AVX2 inline void transpose8(__m256i x[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(x[i], x[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(x[i], x[i + 1]);
  }
  for (int g = 0; g < 8; g += 4) {
    u[g + 0] = _mm256_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm256_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm256_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm256_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    x[c] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x20);
    x[c + 4] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x31);
  }
}

/// Writes the int16 panel of weight rows [n, n + rows) (rows <= kCols),
/// zero past the last row and past K: panel[p * kCols + r] holds row r's
/// codes 2p (low half) and 2p + 1. 8 rows by 8 pairs at a time.
FOLIO_AVX2 void fillPanel(const GemvInt8Args &a, int64_t n, int64_t rows,
                          int64_t pairs, int32_t *panel) {
  for (int64_t p0 = 0; p0 < pairs; p0 += 8) {
    const int64_t codes = std::min<int64_t>(16, a.k - 2 * p0);
    const int64_t np = std::min<int64_t>(8, pairs - p0);
    for (int64_t h = 0; h < 2; ++h) {
      __m256i t[8];
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t r = 8 * h + i;
        if (r >= rows) {
          t[i] = _mm256_setzero_si256();
          continue;
        }
        const int8_t *src = a.w + (n + r) * a.k + 2 * p0;
        __m128i c;
        if (codes == 16) {
          c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
        } else {
          // The row's last codes: zero past K.
          alignas(16) int8_t buf[16] = {};
          std::memcpy(buf, src, size_t(codes));
          c = _mm_load_si128(reinterpret_cast<const __m128i *>(buf));
        }
        t[i] = _mm256_cvtepi8_epi16(c);
      }
      transpose8(t);
      for (int64_t j = 0; j < np; ++j)
        _mm256_store_si256(
            reinterpret_cast<__m256i *>(panel + (p0 + j) * kCols + 8 * h),
            t[j]);
    }
  }
}

/// Adds the 8 int32 lanes of v to s[0 .. 8] (int64).
FOLIO_AVX2 inline void addToSums(__m256i v, int64_t *s) {
  __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v));
  __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1));
  __m256i *d = reinterpret_cast<__m256i *>(s);
  _mm256_store_si256(d, _mm256_add_epi64(_mm256_load_si256(d), lo));
  _mm256_store_si256(d + 1, _mm256_add_epi64(_mm256_load_si256(d + 1), hi));
}

/// y rows m .. m + MR times the panel's columns n .. n + cols.
template <int MR>
FOLIO_AVX2 void rowsTile(const GemvInt8Args &a, const int32_t *panel,
                         int64_t pairs, int64_t n, int64_t cols, int64_t m) {
  alignas(32) int64_t sums[MR][kCols] = {};
  const int16_t *x[MR];
  FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    x[j] = a.xq + (m + j) * a.kPadded;
  for (int64_t p0 = 0; p0 < pairs; p0 += kChunkPairs) {
    const int64_t p1 = std::min(pairs, p0 + kChunkPairs);
    __m256i lo[MR], hi[MR];
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j)
      lo[j] = hi[j] = _mm256_setzero_si256();
    for (int64_t p = p0; p < p1; ++p) {
      const __m256i w0 = _mm256_load_si256(
          reinterpret_cast<const __m256i *>(panel + p * kCols));
      const __m256i w1 = _mm256_load_si256(
          reinterpret_cast<const __m256i *>(panel + p * kCols + 8));
      FOLIO_UNROLL
      for (int j = 0; j < MR; ++j) {
        int32_t v;
        std::memcpy(&v, x[j] + 2 * p, 4);
        const __m256i xb = _mm256_set1_epi32(v);
        lo[j] = maddAdd(lo[j], w0, xb);
        hi[j] = maddAdd(hi[j], w1, xb);
      }
    }
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      addToSums(lo[j], sums[j]);
      addToSums(hi[j], sums[j] + 8);
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    const float scale = a.scales[n + c];
    const float b = a.bias ? a.bias[n + c] : 0.0f;
    for (int j = 0; j < MR; ++j)
      a.y[(m + j) * a.n + n + c] =
          int8GemvOutput(sums[j][c], a.xSteps[m + j], scale,
                         a.numOutliers ? outlierDot(a, n + c, m + j) : 0.0f, b);
  }
}

/// Rows of x per tile: 2 x 6 accumulators, the two panel vectors, the
/// broadcast and a product fit the 16 vector registers.
constexpr int kTileRows = 6;

} // namespace

void gemmInt8X16Avx2(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  // Per worker thread: the panel, 32-byte aligned.
  thread_local std::vector<int32_t> storage;
  const int64_t pairs = (a.k + 1) / 2;
  int32_t *panel = alignedScratch(storage, size_t(pairs * kCols), 32);
  for (int64_t n = nBegin; n < nEnd; n += kCols) {
    const int64_t cols = std::min(kCols, nEnd - n);
    fillPanel(a, n, cols, pairs, panel);
    forEachRowTile<kTileRows>(0, a.m, [&](auto rows, int64_t m) {
      rowsTile<decltype(rows)::value>(a, panel, pairs, n, cols, m);
    });
  }
}

void gemvInt8Avx2(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<1>(a, n);
}

void quantizeXInt16Avx2(const float *x, int64_t m, int64_t k, int16_t *dst,
                        int64_t kPadded, float *steps) {
  quantizeRows(x, m, k, dst, kPadded, steps);
}

} // namespace folio::cpu::detail
