//===- AttentionTileAvx2.cpp - AVX2 attention tile ------------------------===//
//
// The row-oriented tile (AttentionTileImpl.inc) with AVX2 inner loops, as
// AttentionTileAvx512.cpp in 8 lanes: q.k takes four keys at a time, each
// loaded once for up to four query rows, and reduces the 4R partial vectors
// together; p.V keeps 8 output dimensions of each row in registers across
// the chunk's keys, in two sets (even and odd keys) for every row count, so
// results do not depend on how rows are grouped. f32 rows are read in
// place with any head dim (masked loads for the last vector); bf16, f16
// and int8 (one group per row) rows are read in registers when the head
// dim is a multiple of 8, and widened into scratch otherwise, as fp8,
// int4 and int2 rows are.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionChunk.h"
#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/Avx2Math.h"

#include <cmath>
#include <cstring>
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

/// Elements [d, d + 8) of a row as f32 (the code for int8). Only f32 rows
/// may be short (left < 8: the lanes past it read as 0).
template <RowSrc S>
FOLIO_AVX2 inline __m256 load8(const char *row, int64_t d, int64_t left) {
  if constexpr (S == RowSrc::F32 || S == RowSrc::Scratch)
    return loadN(reinterpret_cast<const float *>(row) + d, left);
  else if constexpr (S == RowSrc::BF16)
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(
                              reinterpret_cast<const __m128i *>(row + 2 * d))),
                          16));
  else if constexpr (S == RowSrc::F16)
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 2 * d)));
  else {
    static_assert(S == RowSrc::I8);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + d))));
  }
}

template <RowSrc S, int R>
FOLIO_AVX2 void qkRows(const float *q, int64_t hd, const char *const *k,
                       int64_t nKeys, float *s, const RowPrefetch &pf) {
  for (int64_t j = 0; j < nKeys; j += 4) {
    const char *kp[4];
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
        kv[t] = load8<S>(kp[t], d, left);
      FOLIO_UNROLL
      for (int r = 0; r < R; ++r) {
        __m256 qv = loadN(q + r * hd + d, left);
        FOLIO_UNROLL
        for (int t = 0; t < 4; ++t)
          acc[r][t] = _mm256_fmadd_ps(qv, kv[t], acc[r][t]);
      }
    }
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r)
      _mm_storeu_ps(s + r * kSStride + j, sum4(acc[r]));
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
template <RowSrc S, int R>
FOLIO_AVX2 void pvRows(float *acc, int64_t hd, const float *corr,
                       const float *p, const char *const *v, int64_t nKeys,
                       const RowPrefetch &pf) {
  for (int64_t d0 = 0; d0 < hd; d0 += 8) {
    const int64_t left = hd - d0;
    __m256 a0[R], a1[R];
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r) {
      a0[r] = _mm256_mul_ps(loadN(acc + r * hd + d0, left),
                            _mm256_set1_ps(corr[r]));
      a1[r] = _mm256_setzero_ps();
    }
    int64_t j = 0;
    for (; j + 2 <= nKeys; j += 2) {
      if (d0 == 0) {
        pf(j);
        pf(j + 1);
      }
      __m256 v0 = load8<S>(v[j], d0, left), v1 = load8<S>(v[j + 1], d0, left);
      FOLIO_UNROLL
      for (int r = 0; r < R; ++r) {
        a0[r] = _mm256_fmadd_ps(_mm256_set1_ps(p[r * kSStride + j]), v0, a0[r]);
        a1[r] =
            _mm256_fmadd_ps(_mm256_set1_ps(p[r * kSStride + j + 1]), v1, a1[r]);
      }
    }
    if (j < nKeys) {
      if (d0 == 0)
        pf(j);
      __m256 v0 = load8<S>(v[j], d0, left);
      FOLIO_UNROLL
      for (int r = 0; r < R; ++r)
        a0[r] = _mm256_fmadd_ps(_mm256_set1_ps(p[r * kSStride + j]), v0, a0[r]);
    }
    FOLIO_UNROLL
    for (int r = 0; r < R; ++r)
      storeN(acc + r * hd + d0, left, _mm256_add_ps(a0[r], a1[r]));
  }
}

/// int8 params of n rows ({f16 scale, f16 min} pairs) as f32 arrays.
FOLIO_AVX2 void rowParams(const uint16_t *const *params, int64_t n,
                          float *scale, float *mn) {
  uint32_t pairs[kKeyChunk];
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(&pairs[j], params[j], 4);
  for (int64_t j = n; j % 8 != 0; ++j) // lanes converted, never stored
    pairs[j] = 0;
  for (int64_t i = 0; i < n; i += 8) {
    __m256i w =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(pairs + i));
    __m256i lo = _mm256_and_si256(w, _mm256_set1_epi32(0xffff));
    __m256i hi = _mm256_srli_epi32(w, 16);
    // Per 128-bit lane [lo | hi]; the 64-bit permute puts the 8 scales
    // in the low half and the 8 mins in the high one.
    __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    storeN(scale + i, n - i, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    storeN(mn + i, n - i, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
  }
}

/// int8: s[j] = scale[j] * s[j] + min[j] * qSum, the row's score from its
/// code dot product.
FOLIO_AVX2 void foldKeyParams(float *s, int64_t n, const float *scale,
                              const float *mn, float qSum) {
  __m256 qs = _mm256_set1_ps(qSum);
  for (int64_t i = 0; i < n; i += 8) {
    __m256 x = _mm256_fmadd_ps(loadN(s + i, n - i), loadN(scale + i, n - i),
                               _mm256_mul_ps(loadN(mn + i, n - i), qs));
    storeN(s + i, n - i, x);
  }
}

/// int8: returns sum_j p[j] * min[j] and scales p[j] by scale[j], over the
/// keys with p != 0 only: a key whose weight underflowed to 0 adds nothing,
/// NaN params included.
FOLIO_AVX2 float foldValueParams(float *p, int64_t n, const float *scale,
                                 const float *mn) {
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    __m256 x = loadN(p + i, n - i); // lanes past n read as 0
    __m256 nz = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    sum = _mm256_blendv_ps(sum, _mm256_fmadd_ps(x, loadN(mn + i, n - i), sum),
                           nz);
    x = _mm256_blendv_ps(x, _mm256_mul_ps(x, loadN(scale + i, n - i)), nz);
    storeN(p + i, n - i, x);
  }
  return reduceAdd(sum);
}

/// Rows per pass: four rows' accumulators fill the registers.
constexpr int64_t kPassRows = 4;
#include "codegen/CPU/AttentionTileImpl.inc"

} // namespace

void attendTileAvx2(const AttentionTile &tile) {
  // Narrow rows are read 8 elements at a time with no tail.
  const bool whole = tile.headDim % 8 == 0;
  switch (tile.dtype) {
  case DType::F32:
    return attendRows<RowSrc::F32>(tile);
  case DType::BF16:
    return whole ? attendRows<RowSrc::BF16>(tile)
                 : attendRows<RowSrc::Scratch>(tile);
  case DType::F16:
    return whole ? attendRows<RowSrc::F16>(tile)
                 : attendRows<RowSrc::Scratch>(tile);
  case DType::I8:
    return whole && tile.quantGroup == tile.headDim
               ? attendRows<RowSrc::I8>(tile)
               : attendRows<RowSrc::Scratch>(tile);
  default:
    return attendRows<RowSrc::Scratch>(tile);
  }
}

} // namespace folio::cpu::detail
