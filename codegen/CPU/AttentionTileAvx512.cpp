//===- AttentionTileAvx512.cpp - AVX-512 attention tile -------------------===//
//
// The row-oriented tile (AttentionTileImpl.inc) with AVX-512 inner loops.
// q.k is one vector dot product per key, with up to five query rows
// sharing each loaded key vector; keys are independent, so out-of-order
// execution overlaps their reductions. p.V keeps up to 64 output
// dimensions of the rows in registers across the chunk's keys, one
// accumulator per row and dimension vector for every row count. f32, bf16,
// f16, fp8 and int8 rows (one group per row) are read in registers; int4,
// int2 and multi-group int8 go through the scratch.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionChunk.h"
#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Fp8Avx512.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

FOLIO_AVX512 inline __mmask16 maskAt(int64_t d, int64_t hd) {
  return hd - d >= 16 ? __mmask16(0xffff) : tailMask(hd - d);
}

/// Elements [d, d + 16) of a row (lanes outside m zero): the value for
/// f32 / bf16 / f16, the code for int8, the value before the static scale
/// for fp8.
template <RowSrc S>
FOLIO_AVX512 inline __m512 load16(const char *row, int64_t d, __mmask16 m) {
  if constexpr (S == RowSrc::F32 || S == RowSrc::Scratch)
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float *>(row) + d);
  else if constexpr (S == RowSrc::BF16)
    return loadBf16(reinterpret_cast<const uint16_t *>(row) + d, m);
  else if constexpr (S == RowSrc::F16)
    return loadF16(reinterpret_cast<const uint16_t *>(row) + d, m);
  else if constexpr (S == RowSrc::FP8E4M3)
    return fp8x16<DType::FP8E4M3>(reinterpret_cast<const uint8_t *>(row) + d,
                                  m);
  else if constexpr (S == RowSrc::FP8E5M2)
    return fp8x16<DType::FP8E5M2>(reinterpret_cast<const uint8_t *>(row) + d,
                                  m);
  else
    return _mm512_cvtepi32_ps(
        _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, row + d)));
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

/// s[r * kSStride + j] = q[r] . k[j] for R rows (q rows hd apart), four
/// keys at a time, each key vector loaded (and widened) once for the R
/// rows. Writes up to three scores past nKeys as scratch.
template <RowSrc S, int R>
FOLIO_AVX512 inline __attribute__((always_inline)) void
qkRows(const float *q, int64_t hd, const char *const *k, int64_t nKeys,
       float *s, const RowPrefetch &pf) {
  for (int64_t j = 0; j < nKeys; j += 4) {
    const char *kp[4];
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
        kv[t] = load16<S>(kp[t], d, m);
      for (int r = 0; r < R; ++r) {
        __m512 qv = _mm512_maskz_loadu_ps(m, q + r * hd + d);
        for (int t = 0; t < 4; ++t)
          acc[r][t] = _mm512_fmadd_ps(qv, kv[t], acc[r][t]);
      }
    }
    for (int r = 0; r < R; ++r)
      _mm_storeu_ps(s + r * kSStride + j, sum4(acc[r]));
  }
}

/// acc[r] = acc[r] * corr[r] + sum_j p[r * kSStride + j] v[j] for NV
/// dimension vectors starting at d0 (NV * 16 output dims, the last one
/// masked by hd): the rows' accumulators in registers across the keys, each
/// V vector loaded once for all rows. One accumulator per row and dimension
/// vector for every R, so a row sums its keys in the same order in any tile.
template <RowSrc S, int R, int NV>
FOLIO_AVX512 inline __attribute__((always_inline)) void
pvBlock(float *acc, int64_t hd, int64_t d0, const float *corr, const float *p,
        const char *const *v, int64_t nKeys, const RowPrefetch &pf) {
  __mmask16 m[NV];
  __m512 a[R][NV];
  for (int c = 0; c < NV; ++c) {
    int64_t d = d0 + 16 * c;
    m[c] = maskAt(d, hd);
    for (int r = 0; r < R; ++r)
      a[r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c], acc + r * hd + d),
                              _mm512_set1_ps(corr[r]));
  }
  for (int64_t j = 0; j < nKeys; ++j) {
    if (d0 == 0)
      pf(j);
    __m512 vv[NV];
    for (int c = 0; c < NV; ++c)
      vv[c] = load16<S>(v[j], d0 + 16 * c, m[c]);
    for (int r = 0; r < R; ++r) {
      __m512 pj = _mm512_set1_ps(p[r * kSStride + j]);
      for (int c = 0; c < NV; ++c)
        a[r][c] = _mm512_fmadd_ps(pj, vv[c], a[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NV; ++c)
      _mm512_mask_storeu_ps(acc + r * hd + d0 + 16 * c, m[c], a[r][c]);
}

/// acc[r] = acc[r] * corr[r] + sum_j p[r * kSStride + j] v[j]: up to 64
/// output dims of the R rows per pass over the keys. A head of 16 or 32
/// dims takes one or two vectors per key, not four with the rest masked
/// off (the small heads of draft models: half to a quarter of the loads
/// and FMAs).
template <RowSrc S, int R>
FOLIO_AVX512 inline __attribute__((always_inline)) void
pvRows(float *acc, int64_t hd, const float *corr, const float *p,
       const char *const *v, int64_t nKeys, const RowPrefetch &pf) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    switch ((hd - d0 + 15) / 16) {
    case 1:
      pvBlock<S, R, 1>(acc, hd, d0, corr, p, v, nKeys, pf);
      break;
    case 2:
      pvBlock<S, R, 2>(acc, hd, d0, corr, p, v, nKeys, pf);
      break;
    case 3:
      pvBlock<S, R, 3>(acc, hd, d0, corr, p, v, nKeys, pf);
      break;
    default:
      pvBlock<S, R, 4>(acc, hd, d0, corr, p, v, nKeys, pf);
      break;
    }
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

/// int8: s[j] = scale[j] * s[j] + min[j] * qSum, the row's score from its
/// code dot product.
FOLIO_AVX512 void foldKeyParams(float *s, int64_t n, const float *scale,
                                const float *mn, float qSum) {
  __m512 qs = _mm512_set1_ps(qSum);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = maskAt(i, n);
    __m512 x = _mm512_maskz_loadu_ps(m, s + i);
    x = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, scale + i),
                        _mm512_mul_ps(_mm512_maskz_loadu_ps(m, mn + i), qs));
    _mm512_mask_storeu_ps(s + i, m, x);
  }
}

/// int8: returns sum_j p[j] * min[j] and scales p[j] by scale[j], over the
/// keys with p != 0 only: a key whose weight underflowed to 0 adds nothing,
/// NaN params included.
FOLIO_AVX512 float foldValueParams(float *p, int64_t n, const float *scale,
                                   const float *mn) {
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = maskAt(i, n);
    __m512 x = _mm512_maskz_loadu_ps(m, p + i);
    __mmask16 nz =
        _mm512_mask_cmp_ps_mask(m, x, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    sum = _mm512_mask3_fmadd_ps(x, _mm512_maskz_loadu_ps(nz, mn + i), sum, nz);
    _mm512_mask_storeu_ps(
        p + i, nz, _mm512_mul_ps(x, _mm512_maskz_loadu_ps(nz, scale + i)));
  }
  return _mm512_reduce_add_ps(sum);
}

/// int8 params of n rows ({f16 scale, f16 min} pairs) as f32 arrays.
FOLIO_AVX512 void rowParams(const uint16_t *const *params, int64_t n,
                            float *scale, float *mn) {
  uint32_t pairs[kKeyChunk];
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(&pairs[j], params[j], 4);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = maskAt(i, n);
    __m512i w = _mm512_maskz_loadu_epi32(m, pairs + i);
    _mm512_mask_storeu_ps(scale + i, m,
                          _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w)));
    _mm512_mask_storeu_ps(
        mn + i, m,
        _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16))));
  }
}

#define FOLIO_TILE_TARGET FOLIO_AVX512
/// Rows per pass: five rows of q.k's 4 keys (20 accumulators) and of
/// p.V's 4 dimension vectors fit the 32 registers with the loaded keys.
constexpr int64_t kPassRows = 5;
#include "codegen/CPU/AttentionTileImpl.inc"

void attendTileRows(const AttentionTile &a) {
  switch (a.dtype) {
  case DType::F32:
    return attendRows<RowSrc::F32>(a);
  case DType::BF16:
    return attendRows<RowSrc::BF16>(a);
  case DType::F16:
    return attendRows<RowSrc::F16>(a);
  case DType::FP8E4M3:
    return attendRows<RowSrc::FP8E4M3>(a);
  case DType::FP8E5M2:
    return attendRows<RowSrc::FP8E5M2>(a);
  case DType::I8:
    if (a.quantGroup == a.headDim)
      return attendRows<RowSrc::I8>(a);
    return attendRows<RowSrc::Scratch>(a);
  default:
    return attendRows<RowSrc::Scratch>(a);
  }
}

} // namespace

namespace {
// Below most of a vector of rows the transposed form idles most lanes.
std::atomic<int64_t> transposedMinRows{12};
} // namespace

int64_t setTransposedMinRows(int64_t rows) {
  return transposedMinRows.exchange(rows);
}

void attendTileAvx512(const AttentionTile &tile) {
  // A decode-like tile chooses as its tokens would one at a time.
  const int64_t rows = tile.decodeLike
                           ? tile.groupSize
                           : (tile.tokenEnd - tile.tokenBegin) * tile.groupSize;
  if (rows >= transposedMinRows.load(std::memory_order_relaxed))
    return attendTileTransposedAvx512(tile);
  attendTileRows(tile);
}

} // namespace folio::cpu::detail
