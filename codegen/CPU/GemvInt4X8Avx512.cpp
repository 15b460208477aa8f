//===- GemvInt4X8Avx512.cpp - int4 weights times int8 x (VNNI) ------------===//
//
// The int4 GEMV of GemvInt4Avx512.cpp widens every code to f32 (a shift
// and a vpermps per 16 weights, then an FMA per x row): three vector ops
// per 16 weights, which on an AVX-512 core is more work than reading the
// 8 bytes takes, so int4 decode ran at about half the read bandwidth. Here
// x is quantized to int8 once per call (quantizeXForInt4Avx512), and the codes
// stay integers: per 128-weight block and row, a mask and a shift split the
// 64 bytes into the even and the odd nibbles (each now a byte), and two
// vpdpbusd (unsigned codes times signed x, four products summed per 32-bit
// lane) take the whole block. The block's int32 sums are scaled by the
// weights' group scale times x's block scale into an f32 accumulator; the
// group minimum is added at the end as min x sum(x), with sum(x) exact.
//
// A 32-bit lane of the even-nibble vector holds codes of weights l, 32 + l,
// 64 + l, 96 + l (nibbles 0, 2, 4, 6 of word l; the odd one 16 more), one
// from each 32-weight chunk of the block. With groups of 128 the whole
// block shares one weight scale and x is quantized per block, so the lane
// sums need no regrouping. With groups of 32 or 64 a vpshufb transposes
// the 4 x 4 bytes of every 128-bit lane first, so that 32-bit lane 4c + b
// holds 4 codes of chunk b alone, and x is quantized per group: every
// lane's sum then has a single weight scale and a single x scale.
//
// x's int8 copy (xq) is written in that lane order, 128 bytes per block:
// the even nibbles' 64, then the odd nibbles'. This is the ONNX Runtime
// MatMulNBits "accuracy level 4" and llama.cpp Q4 x Q8 trade: x rounded to
// 8 bits per group (a relative error of at most 1/254 of the group's
// largest |x| per element) for integer dot products.
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/Int4X8Layout.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// 16 floats rounded to the nearest int8 after scaling by `inv`.
FOLIO_AVX512_VNNI inline __m128i quantize16(__m512 v, float inv) {
  return _mm512_cvtsepi32_epi8(
      _mm512_cvtps_epi32(_mm512_mul_ps(v, _mm512_set1_ps(inv))));
}

/// One row of x: see quantizeXForInt4Avx512 in Gemv.h.
FOLIO_AVX512_VNNI void quantizeRow(const float *x, int64_t k, int64_t g,
                                   int8_t *xq, float *scales, float *sums,
                                   int64_t sumLength) {
  std::fill(sums, sums + sumLength, 0.0f);
  const int64_t blocks = int4RowBytes(k) / (kInt4Block / 2);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t base = blk * kInt4Block;
    __m512 v[8];
    float amax[4], sum[4], inv[4], xs[4];
    for (int j = 0; j < 8; ++j) {
      const int64_t left = k - base - 16 * j;
      const __mmask16 msk = left >= 16  ? __mmask16(0xffff)
                            : left <= 0 ? __mmask16(0)
                                        : tailMask(left);
      v[j] = _mm512_maskz_loadu_ps(msk, x + base + 16 * j);
    }
    for (int b = 0; b < 4; ++b) {
      amax[b] = _mm512_reduce_max_ps(
          _mm512_max_ps(_mm512_abs_ps(v[2 * b]), _mm512_abs_ps(v[2 * b + 1])));
      sum[b] = _mm512_reduce_add_ps(_mm512_add_ps(v[2 * b], v[2 * b + 1]));
    }
    int4X8BlockSteps(amax, sum, g, blk, inv, xs, sums, sumLength);
    _mm512_storeu_ps(scales + blk * 16,
                     _mm512_broadcast_f32x4(_mm_loadu_ps(xs)));
    // The even nibbles' x (chunk b's first 16) then the odd ones' (its
    // last 16), each interleaved into the weights' lane order.
    for (int half = 0; half < 2; ++half) {
      __m128i q[4];
      for (int b = 0; b < 4; ++b)
        q[b] = quantize16(v[2 * b + half], inv[b]);
      int4X8Interleave(q, g >= kInt4Block,
                       xq + blk * kInt4Block + half * (kInt4Block / 2));
    }
  }
}

/// The weight scales of block `blk` of a row in the lanes' order: lane
/// 4c + b has chunk b's group scale. Groups past the row read as 0 (their
/// x is 0 too), never as the next row's.
template <int G>
FOLIO_AVX512_VNNI inline __m512 weightScales(const uint16_t *row, int64_t blk,
                                             int64_t groups) {
  if constexpr (G == 128) {
    return _mm512_cvtph_ps(_mm256_set1_epi16(short(row[2 * blk])));
  } else {
    constexpr int kPerBlock = kInt4Block / G;
    const int64_t g0 = blk * kPerBlock;
    const int count = int(std::min<int64_t>(kPerBlock, groups - g0));
    const __m128i p =
        _mm_maskz_loadu_epi16(__mmask8((1u << (2 * count)) - 1u), row + 2 * g0);
    // (scale, min) pairs: group j's scale is float 2j.
    const __m512i idx =
        G == 32
            ? _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6)
            : _mm512_setr_epi32(0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2);
    return _mm512_permutexvar_ps(idx,
                                 _mm512_castps256_ps512(_mm256_cvtph_ps(p)));
  }
}

/// NR weight rows by MR x rows from output row n and x row m. Up to four
/// x rows keep their block in registers; wider tiles (a verify step's five
/// to eight rows, which then read each weight block once) load x where
/// they use it, from L1.
template <int NR, int MR, int G>
FOLIO_AVX512_VNNI void tile(const GemvInt4Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k, rowBytes = int4RowBytes(k);
  const int64_t groups = int4Groups(k, a.groupSize);
  const int64_t blocks = rowBytes / (kInt4Block / 2);
  const uint8_t *w = a.w + n * rowBytes;
  const uint8_t *next = w + NR * rowBytes;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int r = 0; r < MR; ++r)
      acc[i][r] = _mm512_setzero_ps();
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t off = blk * (kInt4Block / 2);
    if (prefetch)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * rowBytes + off),
                     _MM_HINT_T0);
    constexpr bool kHoldX = MR <= 4;
    __m512i xe[kHoldX ? MR : 1], xo[kHoldX ? MR : 1];
    __m512 xs[kHoldX ? MR : 1];
    auto loadX = [&](int r, int slot) FOLIO_AVX512_VNNI {
      const int8_t *xb = a.xq + (m + r) * a.xqRow + 2 * off;
      xe[slot] = _mm512_loadu_si512(xb);
      xo[slot] = _mm512_loadu_si512(xb + kInt4Block / 2);
      xs[slot] = _mm512_loadu_ps(a.xScales + (m + r) * a.xScaleRow + blk * 16);
    };
    if constexpr (kHoldX)
      for (int r = 0; r < MR; ++r)
        loadX(r, r);
    for (int i = 0; i < NR; ++i) {
      const __m512i v = _mm512_loadu_si512(w + i * rowBytes + off);
      __m512i even = _mm512_and_si512(v, nibble);
      __m512i odd = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
      if constexpr (G < 128) {
        even = transposeBytes4x4(even);
        odd = transposeBytes4x4(odd);
      }
      const __m512 ws =
          weightScales<G>(a.params + (n + i) * groups * 2, blk, groups);
      for (int r = 0; r < MR; ++r) {
        const int s = kHoldX ? r : 0;
        if constexpr (!kHoldX)
          loadX(r, 0);
        __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), even, xe[s]);
        d = _mm512_dpbusd_epi32(d, odd, xo[s]);
        acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                                    _mm512_mul_ps(ws, xs[s]), acc[i][r]);
      }
    }
  }
  // min x sum(x) per group: (scale, min) pairs times (0, sum) pairs.
  __m512 mins[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int r = 0; r < MR; ++r)
      mins[i][r] = _mm512_setzero_ps();
  for (int64_t g0 = 0; g0 < groups; g0 += 8) {
    const int64_t count = std::min<int64_t>(8, groups - g0);
    const __mmask16 msk = tailMask(2 * count);
    for (int i = 0; i < NR; ++i) {
      const __m512 p = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(
          msk, a.params + ((n + i) * groups + g0) * 2));
      for (int r = 0; r < MR; ++r)
        mins[i][r] = _mm512_fmadd_ps(
            p, _mm512_loadu_ps(a.xSums + (m + r) * a.xSumRow + 2 * g0),
            mins[i][r]);
    }
  }
  for (int i = 0; i < NR; ++i) {
    const float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int r = 0; r < MR; ++r)
      a.y[(m + r) * a.n + n + i] = _mm512_reduce_add_ps(acc[i][r]) +
                                   _mm512_reduce_add_ps(mins[i][r]) + b;
  }
}

template <int NR, int G>
FOLIO_AVX512_VNNI void rowsOfX(const GemvInt4Args &a, int64_t n) {
  int64_t m = 0;
  if constexpr (NR <= 2) {
    // Eight rows a tile, and five to seven left in one more.
    for (; m + 8 <= a.m; m += 8)
      tile<NR, 8, G>(a, n, m);
    switch (a.m - m) {
    case 7:
      return tile<NR, 7, G>(a, n, m);
    case 6:
      return tile<NR, 6, G>(a, n, m);
    case 5:
      return tile<NR, 5, G>(a, n, m);
    default:
      break;
    }
    for (; m + 4 <= a.m; m += 4)
      tile<NR, 4, G>(a, n, m);
  }
  for (; m + 2 <= a.m; m += 2)
    tile<NR, 2, G>(a, n, m);
  if (m < a.m)
    tile<NR, 1, G>(a, n, m);
}

template <int G>
FOLIO_AVX512_VNNI void gemvRows(const GemvInt4Args &a, int64_t nBegin,
                                int64_t nEnd) {
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

void quantizeXForInt4Avx512(const float *x, int64_t m, int64_t k,
                            int64_t groupSize, Int4X8Buffers &out) {
  int4X8QuantizeRows(x, m, k, groupSize, out, quantizeRow);
}

void gemvInt4X8Avx512(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
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
