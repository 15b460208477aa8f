//===- AttentionTileAvx512.cpp - AVX-512 attention tile -------------------===//
//
// q.k is one vector dot product per key, with up to four query rows sharing
// each loaded key vector (GQA heads and neighbouring tokens); keys are
// independent, so out-of-order execution overlaps their reductions. p.V
// keeps up to 64 output dimensions in registers across the chunk's keys.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/Avx512Math.h"

#include <atomic>
#include <cmath>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

#define FOLIO_TILE_TARGET FOLIO_AVX512

FOLIO_AVX512 inline __mmask16 maskAt(int64_t d, int64_t hd) {
  return hd - d >= 16 ? __mmask16(0xffff) : tailMask(hd - d);
}

/// The sums of four vectors, in that order: pairwise adds within 128-bit
/// lanes, then across lanes; about a third of four full reductions.
FOLIO_AVX512 inline __m128 sum4(const __m512 x[4]) {
  __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(x[0], x[1]),
                             _mm512_unpackhi_ps(x[0], x[1]));
  __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(x[2], x[3]),
                             _mm512_unpackhi_ps(x[2], x[3]));
  // Each 128-bit lane: its part of the four sums.
  __m512 s = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, 0x44),
                           _mm512_shuffle_ps(s01, s23, 0xee));
  s = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, 0x4e));
  s = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, 0xb1));
  return _mm512_castps512_ps128(s);
}

/// Four keys at a time, each loaded once for the R rows; the 4R partial
/// vectors are reduced together by sum4.
template <int R>
FOLIO_AVX512 void qkScoresN(const float *const *q, const float *const *k,
                            int64_t nKeys, int64_t hd, float *s,
                            int64_t sStride, const RowPrefetch &pf) {
  for (int64_t j = 0; j < nKeys; j += 4) {
    const float *kp[4];
    for (int t = 0; t < 4; ++t) {
      kp[t] = k[j + t < nKeys ? j + t : nKeys - 1];
      if (j + t < nKeys)
        pf(j + t);
    }
    __m512 acc[R][4];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < 4; ++t)
        acc[r][t] = _mm512_setzero_ps();
    for (int64_t d = 0; d < hd; d += 16) {
      __mmask16 m = maskAt(d, hd);
      __m512 kv[4];
      for (int t = 0; t < 4; ++t)
        kv[t] = _mm512_maskz_loadu_ps(m, kp[t] + d);
      for (int r = 0; r < R; ++r) {
        __m512 qv = _mm512_maskz_loadu_ps(m, q[r] + d);
        for (int t = 0; t < 4; ++t)
          acc[r][t] = _mm512_fmadd_ps(qv, kv[t], acc[r][t]);
      }
    }
    for (int r = 0; r < R; ++r)
      _mm_storeu_ps(s + r * sStride + j, sum4(acc[r]));
  }
}

FOLIO_AVX512 void qkScores(const float *const *q, int64_t nRows,
                           const float *const *k, int64_t nKeys, int64_t hd,
                           float *s, int64_t sStride, const RowPrefetch &pf) {
  switch (nRows) {
  case 1:
    return qkScoresN<1>(q, k, nKeys, hd, s, sStride, pf);
  case 2:
    return qkScoresN<2>(q, k, nKeys, hd, s, sStride, pf);
  case 3:
    return qkScoresN<3>(q, k, nKeys, hd, s, sStride, pf);
  default:
    return qkScoresN<4>(q, k, nKeys, hd, s, sStride, pf);
  }
}

FOLIO_AVX512 float maxOf(const float *x, int64_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16)
    m = _mm512_mask_max_ps(m, maskAt(i, n), m,
                           _mm512_maskz_loadu_ps(maskAt(i, n), x + i));
  return _mm512_reduce_max_ps(m);
}

FOLIO_AVX512 float expShiftSum(float *x, int64_t n, float mx) {
  __m512 vm = _mm512_set1_ps(mx), sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = maskAt(i, n);
    __m512 e = avx512::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
    sum = _mm512_mask_add_ps(sum, m, sum, e);
    _mm512_mask_storeu_ps(x + i, m, e);
  }
  return _mm512_reduce_add_ps(sum);
}

FOLIO_AVX512 void softCapRow(float *x, int64_t n, float cap) {
  __m512 vcap = _mm512_set1_ps(cap), inv = _mm512_set1_ps(1.0f / cap);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = maskAt(i, n);
    __m512 t =
        avx512::tanh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(t, vcap));
  }
}

/// 64 output dims of R rows in registers across the keys, each V vector
/// loaded once for all rows. With fewer than 12 accumulators the FMA
/// latency would bound the loop, so small R alternates two sets by key.
template <int R>
FOLIO_AVX512 void pvAccumulateN(float *const *acc, const float *corr,
                                const float *p, int64_t pStride,
                                const float *const *v, int64_t nKeys,
                                int64_t hd, const RowPrefetch &pf) {
  constexpr int sets = R <= 2 ? 2 : 1;
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    __mmask16 m[4];
    __m512 a[sets][R][4];
    for (int c = 0; c < 4; ++c) {
      int64_t d = d0 + 16 * c;
      m[c] = d < hd ? maskAt(d, hd) : __mmask16(0);
      for (int r = 0; r < R; ++r) {
        a[0][r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c], acc[r] + d),
                                   _mm512_set1_ps(corr[r]));
        if constexpr (sets == 2)
          a[1][r][c] = _mm512_setzero_ps();
      }
    }
    int64_t j = 0;
    auto step = [&](int set, int64_t key) FOLIO_AVX512 {
      if (d0 == 0)
        pf(key);
      const float *vj = v[key] + d0;
      __m512 vv[4];
      for (int c = 0; c < 4; ++c)
        vv[c] = _mm512_maskz_loadu_ps(m[c], vj + 16 * c);
      for (int r = 0; r < R; ++r) {
        __m512 pj = _mm512_set1_ps(p[r * pStride + key]);
        for (int c = 0; c < 4; ++c)
          a[set][r][c] = _mm512_fmadd_ps(pj, vv[c], a[set][r][c]);
      }
    };
    for (; j + sets <= nKeys; j += sets)
      for (int set = 0; set < sets; ++set)
        step(set, j + set);
    for (; j < nKeys; ++j)
      step(0, j);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < 4; ++c) {
        __m512 x = a[0][r][c];
        if constexpr (sets == 2)
          x = _mm512_add_ps(x, a[1][r][c]);
        _mm512_mask_storeu_ps(acc[r] + d0 + 16 * c, m[c], x);
      }
  }
}

FOLIO_AVX512 void pvAccumulate(float *const *acc, const float *corr,
                               const float *p, int64_t pStride, int64_t nRows,
                               const float *const *v, int64_t nKeys, int64_t hd,
                               const RowPrefetch &pf) {
  switch (nRows) {
  case 1:
    return pvAccumulateN<1>(acc, corr, p, pStride, v, nKeys, hd, pf);
  case 2:
    return pvAccumulateN<2>(acc, corr, p, pStride, v, nKeys, hd, pf);
  case 3:
    return pvAccumulateN<3>(acc, corr, p, pStride, v, nKeys, hd, pf);
  default:
    return pvAccumulateN<4>(acc, corr, p, pStride, v, nKeys, hd, pf);
  }
}

#include "codegen/CPU/AttentionTileImpl.inc"

} // namespace

namespace {
// Below most of a vector of rows the transposed form idles most lanes.
std::atomic<int64_t> transposedMinRows{12};
} // namespace

int64_t setTransposedMinRows(int64_t rows) {
  return transposedMinRows.exchange(rows);
}

void attendTileAvx512(const AttentionTile &tile) {
  if ((tile.tokenEnd - tile.tokenBegin) * tile.groupSize >=
      transposedMinRows.load(std::memory_order_relaxed))
    return attendTileTransposedAvx512(tile);
  attendTileImpl(tile);
}

} // namespace folio::cpu::detail
