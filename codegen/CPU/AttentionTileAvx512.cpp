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
#include "codegen/CPU/Convert.h"

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

template <int R>
FOLIO_AVX512 void qkScoresN(const float *const *q, const float *const *k,
                            int64_t nKeys, int64_t hd, float *s,
                            int64_t sStride) {
  for (int64_t j = 0; j < nKeys; ++j) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_setzero_ps();
    const float *kj = k[j];
    for (int64_t d = 0; d < hd; d += 16) {
      __mmask16 m = maskAt(d, hd);
      __m512 kv = _mm512_maskz_loadu_ps(m, kj + d);
      for (int r = 0; r < R; ++r)
        acc[r] =
            _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q[r] + d), kv, acc[r]);
    }
    for (int r = 0; r < R; ++r)
      s[r * sStride + j] = _mm512_reduce_add_ps(acc[r]);
  }
}

FOLIO_AVX512 void qkScores(const float *const *q, int64_t nRows,
                           const float *const *k, int64_t nKeys, int64_t hd,
                           float *s, int64_t sStride) {
  switch (nRows) {
  case 1:
    return qkScoresN<1>(q, k, nKeys, hd, s, sStride);
  case 2:
    return qkScoresN<2>(q, k, nKeys, hd, s, sStride);
  case 3:
    return qkScoresN<3>(q, k, nKeys, hd, s, sStride);
  default:
    return qkScoresN<4>(q, k, nKeys, hd, s, sStride);
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

FOLIO_AVX512 void pvAccumulate(float *acc, float corr, const float *p,
                               const float *const *v, int64_t nKeys,
                               int64_t hd) {
  __m512 vc = _mm512_set1_ps(corr);
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    __mmask16 m[4];
    __m512 a[4];
    for (int c = 0; c < 4; ++c) {
      int64_t d = d0 + 16 * c;
      m[c] = d < hd ? maskAt(d, hd) : __mmask16(0);
      a[c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c], acc + d), vc);
    }
    for (int64_t j = 0; j < nKeys; ++j) {
      __m512 pj = _mm512_set1_ps(p[j]);
      const float *vj = v[j] + d0;
      for (int c = 0; c < 4; ++c)
        a[c] =
            _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[c], vj + 16 * c), a[c]);
    }
    for (int c = 0; c < 4; ++c)
      _mm512_mask_storeu_ps(acc + d0 + 16 * c, m[c], a[c]);
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
