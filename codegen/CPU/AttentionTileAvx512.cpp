//===- AttentionTileAvx512.cpp - AVX-512 attention tile -------------------===//
//
// Row-oriented: decode's tile, one token's query heads of a GQA group (a
// few rows) against every key of its sequence. q.k is one vector dot
// product per key, with up to four query rows sharing each loaded key
// vector; keys are independent, so out-of-order execution overlaps their
// reductions. p.V keeps up to 64 output dimensions of the rows in registers
// across the chunk's keys.
//
// Decode reads every cache row once, so the rows are consumed in the
// cache's own format: f32, bf16, f16, fp8 and int8 rows widen in registers
// where q.k and p.V load them, and no widened copy is written. Per-row and
// per-head scales are not applied element by element either: fp8's static
// K scale is folded into the queries and its V scale into the final
// normalisation; an int8 row (one {scale, min} per row: group = head_dim,
// what compiled plans use) folds its scale and min into the score,
// s = scale * (q . codes) + min * sum(q), and into the probabilities,
// acc += (p * scale) * codes with sum(p * min) added to every dimension at
// the end. int4, int2 and int8 with several groups per row are widened
// into an f32 scratch once per chunk.
//
// Each row's arithmetic is the same sequence whatever rows share its tile,
// so a request's outputs do not depend on its batch.
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

/// How the tile reads its rows.
enum class Src {
  F32,
  BF16,
  F16,
  FP8E4M3, ///< values before the head's static scale (folded into q, out)
  FP8E5M2,
  I8,     ///< codes with the row's scale and min folded into s and p
  Scratch ///< f32 rows widened into scratch by loadKvRows
};

/// Score row stride: a chunk plus the 4-key block's overhang.
constexpr int64_t kSStride = kKeyChunk + 4;

FOLIO_AVX512 inline __mmask16 maskAt(int64_t d, int64_t hd) {
  return hd - d >= 16 ? __mmask16(0xffff) : tailMask(hd - d);
}

/// Elements [d, d + 16) of a row (lanes outside m zero): the value for
/// f32 / bf16 / f16, the code for int8, the value before the static scale
/// for fp8.
template <Src S>
FOLIO_AVX512 inline __m512 load16(const char *row, int64_t d, __mmask16 m) {
  if constexpr (S == Src::F32 || S == Src::Scratch)
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float *>(row) + d);
  else if constexpr (S == Src::BF16)
    return loadBf16(reinterpret_cast<const uint16_t *>(row) + d, m);
  else if constexpr (S == Src::F16)
    return loadF16(reinterpret_cast<const uint16_t *>(row) + d, m);
  else if constexpr (S == Src::FP8E4M3)
    return fp8x16<DType::FP8E4M3>(reinterpret_cast<const uint8_t *>(row) + d,
                                  m);
  else if constexpr (S == Src::FP8E5M2)
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
template <Src S, int R>
FOLIO_AVX512 void qkRows(const float *q, int64_t hd, const char *const *k,
                         int64_t nKeys, float *s, const RowPrefetch &pf) {
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

/// acc[r] = acc[r] * corr[r] + sum_j p[r * kSStride + j] v[j]: 64 output
/// dims of the R rows in registers across the keys, each V vector loaded
/// once for all rows. One accumulator per row and dimension vector for
/// every R, so a row sums its keys in the same order in any tile.
template <Src S, int R>
FOLIO_AVX512 void pvRows(float *acc, int64_t hd, const float *corr,
                         const float *p, const char *const *v, int64_t nKeys,
                         const RowPrefetch &pf) {
  for (int64_t d0 = 0; d0 < hd; d0 += 64) {
    __mmask16 m[4];
    __m512 a[R][4];
    for (int c = 0; c < 4; ++c) {
      int64_t d = d0 + 16 * c;
      m[c] = d < hd ? maskAt(d, hd) : __mmask16(0);
      for (int r = 0; r < R; ++r)
        a[r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c], acc + r * hd + d),
                                _mm512_set1_ps(corr[r]));
    }
    for (int64_t j = 0; j < nKeys; ++j) {
      if (d0 == 0)
        pf(j);
      __m512 vv[4];
      for (int c = 0; c < 4; ++c)
        vv[c] = load16<S>(v[j], d0 + 16 * c, m[c]);
      for (int r = 0; r < R; ++r) {
        __m512 pj = _mm512_set1_ps(p[r * kSStride + j]);
        for (int c = 0; c < 4; ++c)
          a[r][c] = _mm512_fmadd_ps(pj, vv[c], a[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < 4; ++c)
        _mm512_mask_storeu_ps(acc + r * hd + d0 + 16 * c, m[c], a[r][c]);
  }
}

template <Src S>
FOLIO_AVX512 void qkDispatch(int64_t nRows, const float *q, int64_t hd,
                             const char *const *k, int64_t nKeys, float *s,
                             const RowPrefetch &pf) {
  switch (nRows) {
  case 1:
    return qkRows<S, 1>(q, hd, k, nKeys, s, pf);
  case 2:
    return qkRows<S, 2>(q, hd, k, nKeys, s, pf);
  case 3:
    return qkRows<S, 3>(q, hd, k, nKeys, s, pf);
  default:
    return qkRows<S, 4>(q, hd, k, nKeys, s, pf);
  }
}

template <Src S>
FOLIO_AVX512 void pvDispatch(int64_t nRows, float *acc, int64_t hd,
                             const float *corr, const float *p,
                             const char *const *v, int64_t nKeys,
                             const RowPrefetch &pf) {
  switch (nRows) {
  case 1:
    return pvRows<S, 1>(acc, hd, corr, p, v, nKeys, pf);
  case 2:
    return pvRows<S, 2>(acc, hd, corr, p, v, nKeys, pf);
  case 3:
    return pvRows<S, 3>(acc, hd, corr, p, v, nKeys, pf);
  default:
    return pvRows<S, 4>(acc, hd, corr, p, v, nKeys, pf);
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
/// keys with p != 0 only: a key a row does not see (p = 0) leaves it alone
/// even when its params are NaN.
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

/// Per-thread scratch, reused across tiles: a decode step runs thousands of
/// small tiles, and an allocation each would show.
inline float *rowTileScratch(size_t floats) {
  thread_local std::vector<float> buf;
  if (buf.size() < floats)
    buf.resize(floats);
  return buf.data();
}

template <Src S> FOLIO_AVX512 void attendRows(const AttentionTile &a) {
  constexpr bool kInt8 = S == Src::I8;
  constexpr bool kWiden = S == Src::Scratch;
  constexpr bool kFp8 = S == Src::FP8E4M3 || S == Src::FP8E5M2;
  // fp8: the K scale is folded into the queries, the V scale into the
  // normalisation.
  const float qScale = kFp8 ? a.scale * a.kScale : a.scale;
  const float outScale = kFp8 ? a.vScale : 1.0f;
  const int64_t hd = a.headDim, group = a.groupSize;
  const int64_t numTok = a.tokenEnd - a.tokenBegin;
  const int64_t rows = numTok * group;
  if (rows <= 0)
    return;
  const int64_t lastPos = a.firstPos + numTok - 1;
  const int64_t firstKey = firstTileKey(a), lastKey = lastTileKey(a, lastPos);
  const KvPool kp = kPoolOf(a), vp = vPoolOf(a);
  const size_t rowBytes = a.rowBytes;
  auto chunkEnd = [&](int64_t c0) {
    return c0 + kKeyChunk < lastKey + 1 ? c0 + kKeyChunk : lastKey + 1;
  };
  // Two chunks' rows: the one worked on and the next, whose rows the inner
  // loops request ahead; the next becomes the current one.
  ChunkRows chunks[2];
  ChunkRows *cur = &chunks[0], *next = &chunks[1];
  if (firstKey <= lastKey)
    gatherRows(a, kp, vp, firstKey, chunkEnd(firstKey) - firstKey, *cur);
  // The first chunk has no previous one to request it ahead: ask for it
  // now, so its misses overlap the query setup rather than stalling the
  // first q.k (split-K starts several tiles per sequence mid-stream).
  prefetchChunk(*cur, rowBytes, size_t(a.paramSlot));

  float *qs = rowTileScratch(size_t(2 * rows * hd + 4 * rows + 4 * kSStride +
                                    (kInt8 ? 4 * kKeyChunk : 0) +
                                    (kWiden ? 2 * kKeyChunk * hd : 0)));
  float *acc = qs + rows * hd, *rowMax = acc + rows * hd;
  float *rowSum = rowMax + rows, *qSum = rowSum + rows, *pMin = qSum + rows;
  float *scores = pMin + rows, *params = scores + 4 * kSStride;
  float *kA = params, *kB = kA + kKeyChunk, *vA = kB + kKeyChunk,
        *vB = vA + kKeyChunk;
  float *kBuf = params + (kInt8 ? 4 * kKeyChunk : 0),
        *vBuf = kBuf + kKeyChunk * hd;
  // Query rows pre-multiplied by the scale, contiguous: row r is token
  // r / group, head kvHead * group + r % group.
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = a.tokenBegin + r / group;
    int64_t h = a.kvHead * group + r % group;
    const float *src = a.q + (t * a.numHeads + h) * hd;
    float sum = 0.0f;
    for (int64_t d = 0; d < hd; ++d) {
      qs[r * hd + d] = src[d] * qScale;
      sum += qs[r * hd + d];
    }
    qSum[r] = sum;
    rowMax[r] = -INFINITY;
    rowSum[r] = 0.0f;
    pMin[r] = 0.0f;
  }
  for (int64_t i = 0; i < rows * hd; ++i)
    acc[i] = 0.0f;

  for (int64_t c0 = firstKey; c0 <= lastKey; c0 += kKeyChunk) {
    const int64_t c1 = chunkEnd(c0), n = c1 - c0;
    // Decode reads every K/V row once, from memory, and a kv head's rows
    // are strided by the other heads', which defeats the hardware's stream
    // prefetch. So the inner loops request the next chunk's row j while
    // they work on this chunk's row j: the misses overlap the arithmetic
    // without a burst of requests that would stall it. The params are
    // read at the start of a chunk, so the next chunk's are requested now.
    next->n = 0;
    if (c1 <= lastKey) {
      gatherRows(a, kp, vp, c1, chunkEnd(c1) - c1, *next);
      prefetchParams(next->kPar, next->n, size_t(a.paramSlot));
      prefetchParams(next->vPar, next->n, size_t(a.paramSlot));
    }
    const char **kRow = cur->k, **vRow = cur->v;
    if constexpr (kWiden) {
      loadKvRows(kp.format, kRow, cur->kPar, n, kBuf);
      loadKvRows(vp.format, vRow, cur->vPar, n, vBuf);
      for (int64_t j = 0; j < n; ++j) {
        kRow[j] = reinterpret_cast<const char *>(kBuf + j * hd);
        vRow[j] = reinterpret_cast<const char *>(vBuf + j * hd);
      }
    }
    if constexpr (kInt8) {
      rowParams(cur->kPar, n, kA, kB);
      rowParams(cur->vPar, n, vA, vB);
    }
    // int2: a resident row is f32 and longer than rowBytes; its first
    // lines are asked for (the newest rows, usually still cached).
    for (int64_t j = next->n; j < kKeyChunk; ++j)
      next->k[j] = next->v[j] = nullptr;
    const char *const *kNext = next->k, *const *vNext = next->v;

    for (int64_t r0 = 0; r0 < rows; r0 += 4) {
      int64_t nr = rows - r0 < 4 ? rows - r0 : 4;
      // Visible keys of each row within this chunk, and their union.
      int64_t jlo[4], jhi[4], ulo = n, uhi = 0;
      for (int64_t i = 0; i < nr; ++i) {
        int64_t pos = a.firstPos + (r0 + i) / group;
        int64_t lo = lowestKey(a, pos) > c0 ? lowestKey(a, pos) : c0;
        int64_t hi = pos + 1 < c1 ? pos + 1 : c1;
        jlo[i] = lo - c0;
        jhi[i] = hi - c0;
        if (jlo[i] < jhi[i]) {
          ulo = jlo[i] < ulo ? jlo[i] : ulo;
          uhi = jhi[i] > uhi ? jhi[i] : uhi;
        }
      }
      if (ulo >= uhi)
        continue;
      const int64_t width = uhi - ulo;
      float corr[4];
      // One row group prefetches for all.
      RowPrefetch kPf{r0 == 0 ? kNext + ulo : nullptr, rowBytes};
      RowPrefetch vPf{r0 == 0 ? vNext + ulo : nullptr, rowBytes};
      qkDispatch<S>(nr, qs + r0 * hd, hd, kRow + ulo, width, scores, kPf);
      for (int64_t i = 0; i < nr; ++i) {
        int64_t r = r0 + i;
        float *p = scores + i * kSStride;
        // p.V runs over the union of the rows' keys: the keys a row does
        // not see get p = 0 (a row that sees none keeps its state: corr 1).
        int64_t lo = jlo[i] > ulo ? jlo[i] : ulo,
                hi = jhi[i] < uhi ? jhi[i] : uhi;
        if (lo >= hi) {
          corr[i] = 1.0f;
          for (int64_t j = 0; j < width; ++j)
            p[j] = 0.0f;
          continue;
        }
        float *s = p + (lo - ulo);
        int64_t cnt = hi - lo;
        if constexpr (kInt8)
          foldKeyParams(s, cnt, kA + lo, kB + lo, qSum[r]);
        if (a.softCap > 0.0f)
          softCapRow(s, cnt, a.softCap);
        float m = maxOf(s, cnt);
        float mNew = m > rowMax[r] ? m : rowMax[r];
        corr[i] = rowMax[r] == -INFINITY ? 0.0f : std::exp(rowMax[r] - mNew);
        float sum = expShiftSum(s, cnt, mNew);
        rowSum[r] = rowSum[r] * corr[i] + sum;
        rowMax[r] = mNew;
        for (int64_t j = 0; j < lo - ulo; ++j)
          p[j] = 0.0f;
        for (int64_t j = hi - ulo; j < width; ++j)
          p[j] = 0.0f;
        if constexpr (kInt8)
          pMin[r] =
              pMin[r] * corr[i] + foldValueParams(s, cnt, vA + lo, vB + lo);
      }
      pvDispatch<S>(nr, acc + r0 * hd, hd, corr, scores, vRow + ulo, width,
                    vPf);
    }
    std::swap(cur, next);
  }

  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = a.tokenBegin + r / group;
    int64_t h = a.kvHead * group + r % group;
    float *dst = a.out + (t * a.numHeads + h) * hd;
    // Without a split every row sees at least its own key; the guard keeps
    // a corrupt cache from producing inf. A split's row may see no key.
    float inv = rowSum[r] > 0.0f ? outScale / rowSum[r] : 0.0f;
    if (a.partialOut) {
      dst = a.partialOut + r * hd;
      a.partialLse[r] =
          rowSum[r] > 0.0f ? rowMax[r] + std::log(rowSum[r]) : -INFINITY;
    }
    for (int64_t d = 0; d < hd; ++d)
      dst[d] = (acc[r * hd + d] + pMin[r]) * inv;
  }
}

void attendTileRows(const AttentionTile &a) {
  switch (a.dtype) {
  case DType::F32:
    return attendRows<Src::F32>(a);
  case DType::BF16:
    return attendRows<Src::BF16>(a);
  case DType::F16:
    return attendRows<Src::F16>(a);
  case DType::FP8E4M3:
    return attendRows<Src::FP8E4M3>(a);
  case DType::FP8E5M2:
    return attendRows<Src::FP8E5M2>(a);
  case DType::I8:
    if (a.quantGroup == a.headDim)
      return attendRows<Src::I8>(a);
    return attendRows<Src::Scratch>(a);
  default:
    return attendRows<Src::Scratch>(a);
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
  if ((tile.tokenEnd - tile.tokenBegin) * tile.groupSize >=
      transposedMinRows.load(std::memory_order_relaxed))
    return attendTileTransposedAvx512(tile);
  attendTileRows(tile);
}

} // namespace folio::cpu::detail
