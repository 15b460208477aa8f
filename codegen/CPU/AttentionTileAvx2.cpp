//===- AttentionTileAvx2.cpp - AVX2 attention tile ------------------------===//
//
// The row-oriented tile (AttentionTileImpl.inc) with AVX2 inner loops, as
// AttentionTileAvx512.cpp in 8 lanes: q.k takes four keys at a time, each
// loaded once for up to four query rows, and reduces the 4R partial vectors
// together; p.V keeps 8 output dimensions of each row in registers across
// the chunk's keys, in two sets (even and odd keys) for every row count, so
// results do not depend on how rows are grouped. Head dims that are not a
// multiple of 8 use masked loads and stores for the last vector.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionChunk.h"
#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/Avx2Math.h"

#include <cmath>
#include <utility>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

#define FOLIO_TILE_TARGET FOLIO_AVX2
#define FOLIO_UNROLL _Pragma("GCC unroll 8")

/// x[0..n) where n may be short of 8 (masked lanes read as 0).
FOLIO_AVX2 inline __m256 loadN(const float *x, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(x) : loadTail(x, n);
}

FOLIO_AVX2 inline void storeN(float *x, int64_t n, __m256 v) {
  if (n >= 8)
    _mm256_storeu_ps(x, v);
  else
    _mm256_maskstore_ps(x, tailMask(n), v);
}

/// The sums of four vectors, in that order.
FOLIO_AVX2 inline __m128 sum4(const __m256 (&x)[4]) {
  __m256 s01 = _mm256_hadd_ps(x[0], x[1]);
  __m256 s23 = _mm256_hadd_ps(x[2], x[3]);
  __m256 s = _mm256_hadd_ps(s01, s23);
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

template <int R>
FOLIO_AVX2 void qkScoresN(const float *const *q, const float *const *k,
                          int64_t nKeys, int64_t hd, float *s, int64_t sStride,
                          const RowPrefetch &pf) {
  for (int64_t j = 0; j < nKeys; j += 4) {
    const float *kp[4];
    for (int t = 0; t < 4; ++t) {
      kp[t] = k[j + t < nKeys ? j + t : nKeys - 1];
      if (j + t < nKeys)
        pf(j + t);
    }
    __m256 acc[R][4];
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r)
      FOLIO_UNROLL
    for (int t = 0; t < 4; ++t)
      acc[r][t] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d += 8) {
      const int64_t left = hd - d;
      __m256 kv[4];
      FOLIO_UNROLL
      for (int t = 0; t < 4; ++t)
        kv[t] = loadN(kp[t] + d, left);
      FOLIO_UNROLL
      for (int r = 0; r < R; ++r) {
        __m256 qv = loadN(q[r] + d, left);
        FOLIO_UNROLL
        for (int t = 0; t < 4; ++t)
          acc[r][t] = _mm256_fmadd_ps(qv, kv[t], acc[r][t]);
      }
    }
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r)
      _mm_storeu_ps(s + r * sStride + j, sum4(acc[r]));
  }
}

FOLIO_AVX2 void qkScores(const float *const *q, int64_t nRows,
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

FOLIO_AVX2 float maxOf(const float *x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float r = -INFINITY;
  for (float v : lanes)
    r = v > r ? v : r;
  for (; i < n; ++i)
    r = x[i] > r ? x[i] : r;
  return r;
}

FOLIO_AVX2 float expShiftSum(float *x, int64_t n, float mx) {
  __m256 vm = _mm256_set1_ps(mx), sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    __m256 e = exp(_mm256_sub_ps(loadN(x + i, n - i), vm));
    if (n - i < 8) // lanes past n must not add exp(0 - mx)
      e = _mm256_and_ps(e, _mm256_castsi256_ps(tailMask(n - i)));
    sum = _mm256_add_ps(sum, e);
    storeN(x + i, n - i, e);
  }
  return reduceAdd(sum);
}

FOLIO_AVX2 void softCapRow(float *x, int64_t n, float cap) {
  __m256 vcap = _mm256_set1_ps(cap), inv = _mm256_set1_ps(1.0f / cap);
  for (int64_t i = 0; i < n; i += 8) {
    __m256 t = tanh(_mm256_mul_ps(loadN(x + i, n - i), inv));
    storeN(x + i, n - i, _mm256_mul_ps(t, vcap));
  }
}

/// 8 output dims of R rows in registers across the keys, each V vector
/// loaded once for all rows. Even and odd keys go to two accumulator sets
/// (so the FMA latency does not bound the loop at one row), summed at the
/// end: the same order for every R, so a row's output does not depend on
/// which rows share its tile, and a request samples the same tokens alone
/// as in any batch.
template <int R>
FOLIO_AVX2 void pvAccumulateN(float *const *acc, const float *corr,
                              const float *p, int64_t pStride,
                              const float *const *v, int64_t nKeys, int64_t hd,
                              const RowPrefetch &pf) {
  for (int64_t d0 = 0; d0 < hd; d0 += 8) {
    const int64_t left = hd - d0;
    __m256 a0[R], a1[R];
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r) {
      a0[r] = _mm256_mul_ps(loadN(acc[r] + d0, left), _mm256_set1_ps(corr[r]));
      a1[r] = _mm256_setzero_ps();
    }
    int64_t j = 0;
    for (; j + 2 <= nKeys; j += 2) {
      if (d0 == 0) {
        pf(j);
        pf(j + 1);
      }
      __m256 v0 = loadN(v[j] + d0, left), v1 = loadN(v[j + 1] + d0, left);
      FOLIO_UNROLL
      for (int r = 0; r < R; ++r) {
        a0[r] = _mm256_fmadd_ps(_mm256_set1_ps(p[r * pStride + j]), v0, a0[r]);
        a1[r] =
            _mm256_fmadd_ps(_mm256_set1_ps(p[r * pStride + j + 1]), v1, a1[r]);
      }
    }
    if (j < nKeys) {
      if (d0 == 0)
        pf(j);
      __m256 v0 = loadN(v[j] + d0, left);
      FOLIO_UNROLL
      for (int r = 0; r < R; ++r)
        a0[r] = _mm256_fmadd_ps(_mm256_set1_ps(p[r * pStride + j]), v0, a0[r]);
    }
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r)
      storeN(acc[r] + d0, left, _mm256_add_ps(a0[r], a1[r]));
  }
}

FOLIO_AVX2 void pvAccumulate(float *const *acc, const float *corr,
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

void attendTileAvx2(const AttentionTile &tile) { attendTileImpl(tile); }

} // namespace folio::cpu::detail
