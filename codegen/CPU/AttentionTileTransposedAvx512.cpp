//===- AttentionTileTransposedAvx512.cpp - Query rows in vector lanes -----===//
//
// For tiles of many query rows (prefill). A row-oriented q.k needs one
// horizontal sum per score; here the tile's scaled queries are transposed,
// Qt[d][row], so a score vector over 16 rows is hd FMAs of a Qt row with a
// broadcast K element and no horizontal work at all. The online softmax
// then runs across keys with the 16 rows' running max and sum as vectors;
// the causal / window mask is a compare of per-lane positions against the
// key position, and p.V accumulates Ot[d][row] += V[key][d] * Pt[key][row]
// with V broadcast. Each lane computes its row with the same operation
// sequence whatever its neighbours are, so results depend only on the row.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/AttentionTileLanes.h"
#include "codegen/CPU/Avx512Math.h"

#include <cfloat>
#include <cmath>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;
using namespace folio::cpu::detail::lanes;

/// Keys per softmax step: small enough that each phase's working set (Qt,
/// the chunk's K rows and St; or Pt, the V rows and Ot) stays in L1.
constexpr int64_t kChunk = 32;

/// Keys per q.k register block for NV row vectors: about 16 accumulators,
/// enough to hide the FMA latency, with loads well under the FMA count.
constexpr int keyBlock(int nv) { return nv >= 3 ? 4 : 8; }
constexpr int kMaxKeyBlock = 8;

/// St[j][rows] = sum_d K[j][d] * Qt[d][rows] for KB keys.
template <int KB, int NV>
FOLIO_AVX512 void scoreBlock(const float *qt, const float *const *k, int64_t hd,
                             float *st) {
  constexpr int ld = 16 * NV;
  __m512 acc[KB][NV];
  const float *kp[KB];
  for (int j = 0; j < KB; ++j) {
    kp[j] = k[j];
    for (int v = 0; v < NV; ++v)
      acc[j][v] = _mm512_setzero_ps();
  }
  for (int64_t d = 0; d < hd; ++d) {
    __m512 q[NV];
    for (int v = 0; v < NV; ++v)
      q[v] = _mm512_load_ps(qt + d * ld + 16 * v);
    for (int j = 0; j < KB; ++j) {
      __m512 kb = _mm512_set1_ps(kp[j][d]);
      for (int v = 0; v < NV; ++v)
        acc[j][v] = _mm512_fmadd_ps(kb, q[v], acc[j][v]);
    }
  }
  for (int j = 0; j < KB; ++j)
    for (int v = 0; v < NV; ++v)
      _mm512_store_ps(st + j * ld + 16 * v, acc[j][v]);
}

/// Ot[d0 .. d0+DB)[rows] = Ot * corr + sum_j V[j][d] * Pt[j][rows].
template <int DB, int NV>
FOLIO_AVX512 void pvBlock(float *ot, const __m512 *corr, const float *pt,
                          const float *const *v, int64_t d0, int64_t n) {
  constexpr int ld = 16 * NV;
  __m512 acc[DB][NV];
  for (int d = 0; d < DB; ++d)
    for (int r = 0; r < NV; ++r)
      acc[d][r] =
          _mm512_mul_ps(_mm512_load_ps(ot + (d0 + d) * ld + 16 * r), corr[r]);
  for (int64_t j = 0; j < n; ++j) {
    __m512 p[NV];
    for (int r = 0; r < NV; ++r)
      p[r] = _mm512_load_ps(pt + j * ld + 16 * r);
    const float *vj = v[j] + d0;
    for (int d = 0; d < DB; ++d) {
      __m512 vb = _mm512_set1_ps(vj[d]);
      for (int r = 0; r < NV; ++r)
        acc[d][r] = _mm512_fmadd_ps(vb, p[r], acc[d][r]);
    }
  }
  for (int d = 0; d < DB; ++d)
    for (int r = 0; r < NV; ++r)
      _mm512_store_ps(ot + (d0 + d) * ld + 16 * r, acc[d][r]);
}

/// The widest register block of output dims for NV row vectors, then
/// halving blocks for the tail, so any head size works.
template <int NV>
FOLIO_AVX512 void pvAll(float *ot, const __m512 *corr, const float *pt,
                        const float *const *v, int64_t hd, int64_t n) {
  constexpr int maxDb = NV >= 3 ? 4 : 16 / NV;
  int64_t d0 = 0;
  for (; d0 + maxDb <= hd; d0 += maxDb)
    pvBlock<maxDb, NV>(ot, corr, pt, v, d0, n);
  if constexpr (maxDb > 8)
    if (hd - d0 >= 8) {
      pvBlock<8, NV>(ot, corr, pt, v, d0, n);
      d0 += 8;
    }
  if constexpr (maxDb > 4)
    if (hd - d0 >= 4) {
      pvBlock<4, NV>(ot, corr, pt, v, d0, n);
      d0 += 4;
    }
  if (hd - d0 >= 2) {
    pvBlock<2, NV>(ot, corr, pt, v, d0, n);
    d0 += 2;
  }
  if (hd - d0 >= 1)
    pvBlock<1, NV>(ot, corr, pt, v, d0, n);
}

/// Rows [r0, r0 + 16*NV) of the tile (the last vector may be partial).
template <int NV>
FOLIO_AVX512 void attendPass(const AttentionTile &a, int64_t r0, int64_t nr) {
  constexpr int ld = 16 * NV;
  constexpr int kb = keyBlock(NV);
  const int64_t hd = a.headDim, group = a.groupSize;
  const bool convert = a.dtype != DType::F32;
  const size_t stFloats = size_t((kChunk + kMaxKeyBlock) * ld);
  const size_t tileFloats = size_t(hd * ld);
  const size_t kvFloats = convert ? size_t(2 * kChunk * hd) : 0;
  float *qt = threadScratch(2 * tileFloats + stFloats + kvFloats);
  float *ot = qt + tileFloats, *st = ot + tileFloats;
  float *kBuf = st + stFloats, *vBuf = kBuf + kChunk * hd;

  // Padding lanes get a position no key matches; their outputs are dropped.
  alignas(64) int32_t pos[ld], lo[ld];
  for (int64_t i = 0; i < ld; ++i) {
    int64_t p = a.firstPos + (r0 + i) / group;
    pos[i] = i < nr ? int32_t(p) : -1;
    lo[i] = i < nr ? int32_t(lowestKey(a, p)) : 0;
  }
  for (int v = 0; v < NV; ++v) {
    const float *src[16];
    for (int64_t i = 0; i < 16; ++i)
      src[i] = 16 * v + i < nr ? queryRow(a, a.q, r0 + 16 * v + i) : nullptr;
    for (int64_t d0 = 0; d0 < hd; d0 += 16) {
      __mmask16 m = hd - d0 >= 16 ? __mmask16(0xffff) : tailMask(hd - d0);
      __m512 x[16];
      for (int i = 0; i < 16; ++i)
        x[i] = src[i] ? _mm512_mul_ps(_mm512_maskz_loadu_ps(m, src[i] + d0),
                                      _mm512_set1_ps(a.scale * kLog2e))
                      : _mm512_setzero_ps();
      transpose16(x);
      for (int64_t c = 0; c < 16 && d0 + c < hd; ++c)
        _mm512_store_ps(qt + (d0 + c) * ld + 16 * v, x[c]);
    }
  }
  for (size_t i = 0; i < tileFloats; ++i)
    ot[i] = 0.0f;

  // A finite floor instead of -inf: a row with no visible key yet keeps
  // max = floor and corr = exp(0) = 1 rather than exp(-inf - -inf) = NaN.
  __m512 rowMax[NV], rowSum[NV], corr[NV];
  for (int v = 0; v < NV; ++v) {
    rowMax[v] = _mm512_set1_ps(-FLT_MAX);
    rowSum[v] = _mm512_setzero_ps();
  }
  const int64_t minPos = a.firstPos + r0 / group;
  const int64_t maxPos = a.firstPos + (r0 + nr - 1) / group;
  const int64_t firstKey =
      lowestKey(a, minPos) > a.keyBegin ? lowestKey(a, minPos) : a.keyBegin;
  const int64_t lastKey = lastTileKey(a, maxPos);
  const int64_t maxLow = lowestKey(a, maxPos);
  const KvPool kp = kPoolOf(a), vp = vPoolOf(a);
  const size_t rowBytes = a.rowBytes;
  const float *kRow[kChunk + kMaxKeyBlock], *vRow[kChunk];

  // Chunks end at multiples of kChunk, as the row tile's at kKeyChunk: a
  // row's softmax steps do not depend on the tile's first row.
  for (int64_t c0 = firstKey, c1; c0 <= lastKey; c0 = c1) {
    c1 = keyChunkEnd(c0, kChunk, lastKey);
    int64_t n = c1 - c0;
    KvRowCursor cursor(a, c0);
    const char *kSrc[kChunk], *vSrc[kChunk];
    const uint16_t *kPar[kChunk], *vPar[kChunk];
    for (int64_t j = 0; j < n; ++j, cursor.next()) {
      KvRowRef kr = kp.at(cursor), vr = vp.at(cursor);
      kSrc[j] = kr.row;
      vSrc[j] = vr.row;
      kPar[j] = kr.params;
      vPar[j] = vr.params;
    }
    for (int64_t j = 0; j < n; ++j) {
      kRow[j] =
          convert ? kBuf + j * hd : reinterpret_cast<const float *>(kSrc[j]);
      vRow[j] =
          convert ? vBuf + j * hd : reinterpret_cast<const float *>(vSrc[j]);
    }
    if (convert) { // narrow or quantized rows, widened once per chunk
      loadKvRowsAvx512(kp.format, kSrc, kPar, n, kBuf);
      loadKvRowsAvx512(vp.format, vSrc, vPar, n, vBuf);
    }
    // The next chunk's rows, requested now: with few rows per tile (a few
    // speculative tokens) the K/V reads from memory dominate. A chunk's
    // arithmetic is long enough to absorb the burst.
    for (int64_t pos = c1; pos < c1 + kChunk && pos <= lastKey;
         ++pos, cursor.next()) {
      // int2: a resident row is f32; its first rowBytes are asked for.
      for (const char *row : {kp.at(cursor).row, vp.at(cursor).row}) {
        uintptr_t first = reinterpret_cast<uintptr_t>(row) & ~uintptr_t(63);
        uintptr_t last = reinterpret_cast<uintptr_t>(row + rowBytes - 1);
        for (uintptr_t line = first; line <= last; line += 64)
          _mm_prefetch(reinterpret_cast<const char *>(line), _MM_HINT_T1);
      }
    }
    // The last key block repeats a real row; its scores are never read.
    int64_t nPad = (n + kb - 1) / kb * kb;
    for (int64_t j = n; j < nPad; ++j)
      kRow[j] = kRow[n - 1];
    for (int64_t j = 0; j < nPad; j += kb)
      scoreBlock<kb, NV>(qt, kRow + j, hd, st + j * ld);

    // Every lane sees every key of the chunk unless the chunk crosses the
    // diagonal or a window edge. (Padding lanes score 0 against every key:
    // finite, and never stored.)
    const bool masked = c1 - 1 > minPos || c0 < maxLow;
    // tanh(s / cap) * cap in natural units is the same map with cap scaled
    // by log2 e in log2 units.
    const __m512 cap = _mm512_set1_ps(a.softCap * kLog2e);
    const __m512 invCap =
        _mm512_set1_ps(a.softCap > 0 ? 1 / (a.softCap * kLog2e) : 0);
    for (int v = 0; v < NV; ++v) {
      __m512i vPos = _mm512_load_si512(pos + 16 * v);
      __m512i vLo = _mm512_load_si512(lo + 16 * v);
      __m512 mx = capAndMax(st + 16 * v, n, ld, a.softCap > 0, cap, invCap,
                            masked, vLo, vPos, c0, rowMax[v]);
      corr[v] = exp2(_mm512_sub_ps(rowMax[v], mx));
      __m512 sum = _mm512_setzero_ps();
      for (int64_t j = 0; j < n; ++j) {
        float *s = st + j * ld + 16 * v;
        __m512 e = exp2(_mm512_sub_ps(_mm512_load_ps(s), mx));
        e = _mm512_maskz_mov_ps(
            masked ? visibleLanes(vLo, vPos, c0 + j) : __mmask16(0xffff), e);
        sum = _mm512_add_ps(sum, e);
        _mm512_store_ps(s, e);
      }
      rowSum[v] = _mm512_fmadd_ps(rowSum[v], corr[v], sum);
      rowMax[v] = mx;
    }
    pvAll<NV>(ot, corr, st, vRow, hd, n);
  }

  // Without a split every row sees at least its own key; the guard keeps a
  // corrupt cache from producing inf. A split's row may see no key.
  alignas(64) float inv[ld], sums[ld], maxes[ld];
  for (int v = 0; v < NV; ++v) {
    __mmask16 seen =
        _mm512_cmp_ps_mask(rowSum[v], _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_store_ps(inv + 16 * v,
                    _mm512_maskz_div_ps(seen, _mm512_set1_ps(1.0f), rowSum[v]));
    _mm512_store_ps(sums + 16 * v, rowSum[v]);
    _mm512_store_ps(maxes + 16 * v, rowMax[v]);
  }
  if (a.partialOut)
    for (int64_t i = 0; i < nr; ++i) // log2 units back to natural log
      a.partialLse[r0 + i] =
          sums[i] > 0.0f ? (maxes[i] + std::log2(sums[i])) / kLog2e : -INFINITY;
  for (int v = 0; v < NV; ++v) {
    __m512 scale = _mm512_load_ps(inv + 16 * v);
    for (int64_t d0 = 0; d0 < hd; d0 += 16) {
      __mmask16 m = hd - d0 >= 16 ? __mmask16(0xffff) : tailMask(hd - d0);
      __m512 x[16];
      for (int64_t c = 0; c < 16; ++c)
        x[c] = d0 + c < hd
                   ? _mm512_mul_ps(_mm512_load_ps(ot + (d0 + c) * ld + 16 * v),
                                   scale)
                   : _mm512_setzero_ps();
      transpose16(x);
      for (int64_t i = 0; i < 16 && 16 * v + i < nr; ++i)
        _mm512_mask_storeu_ps((a.partialOut
                                   ? a.partialOut + (r0 + 16 * v + i) * hd
                                   : queryRow(a, a.out, r0 + 16 * v + i)) +
                                  d0,
                              m, x[i]);
    }
  }
}

} // namespace

void attendTileTransposedAvx512(const AttentionTile &a) {
  const int64_t rows = (a.tokenEnd - a.tokenBegin) * a.groupSize;
  for (int64_t r0 = 0; r0 < rows; r0 += kLaneRows) {
    int64_t nr = rows - r0 < kLaneRows ? rows - r0 : kLaneRows;
    switch ((nr + 15) / 16) {
    case 1:
      attendPass<1>(a, r0, nr);
      break;
    case 2:
      attendPass<2>(a, r0, nr);
      break;
    case 3:
      attendPass<3>(a, r0, nr);
      break;
    default:
      attendPass<4>(a, r0, nr);
      break;
    }
  }
}

} // namespace folio::cpu::detail
