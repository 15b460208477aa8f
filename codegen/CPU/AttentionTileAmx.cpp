//===- AttentionTileAmx.cpp - Attention tile on AMX bf16 tiles ------------===//
//
// For tiles of many query rows (prefill) on CPUs with AMX-BF16. The same
// formulation as the transposed AVX-512 tile (query rows in vector lanes,
// online softmax over 32-key chunks in log2 units), with both products on
// AMX in bf16 and f32 accumulation:
//   St[key][row] = K[key][:] . Qt[:][row]    A = K rows, B = Qt as pairs
//   Ot[d][row]  += Vt[d][:] . Pt[:][row]     A = V^T,    B = Pt as pairs
// so the softmax reads St exactly as the AVX-512 tile does, and Ot has the
// AVX-512 tile's layout. The scaled queries are rounded to bf16 once per
// tile. K and V are converted from the cache once per super-chunk of keys
// into the layouts the A operands need and then serve every pass of 64
// rows of the tile, which holds all query heads of a kv head over many
// tokens (up to kAmxTileRows rows): the conversion (a transpose for V) is
// paid once per tile and super-chunk, not once per 64-row pass.
//
// bf16 inputs put the result about 4e-3 max|v| from f32 (see kAmxTol in
// the tests), so pagedAttention uses it only when the caller allows bf16
// products (AttentionParams::allowBf16) or FOLIO_ATTENTION_AMX=force.
//
// AmxTiles.h says how the AMX files are compiled and how tile state is
// kept per call.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AmxTiles.h"
#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/AttentionTileLanes.h"
#include "codegen/CPU/CPUFeatures.h"

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <immintrin.h>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::amx;
using namespace folio::cpu::avx512;
using namespace folio::cpu::detail::lanes;

/// Keys per softmax step: one B operand of P (16 pairs) and two A
/// operands of K (16 keys each).
constexpr int64_t kChunk = 32;
/// Keys converted at a time and shared by every pass of the tile: 64 KiB of
/// bf16 K and V at head size 64, which stays in L2 beside the passes' state.
constexpr int64_t kSuper = 256;
/// Query rows per pass: four 16-row C tiles of scores per 16 keys.
constexpr int64_t kPassRows = 64;
constexpr int64_t kMaxHeadDim = 256;
/// See softmaxChunk (log2 units).
constexpr float kLazyMax = 8.0f;

/// Interleaves two rows of 16 bf16, a and b, as the pairs (a[i], b[i]) that
/// a B operand holds per 32-bit element.
FOLIO_AMX inline __m512i pairs(__m512 a, __m512 b) {
  // cvtne2ps2bf16(b, a) = a[0..15], b[0..15].
  __m512i ab = (__m512i)_mm512_cvtne2ps_pbh(b, a);
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11,
                                       26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                       5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, ab);
}

/// 32 f32 to 32 bf16 in order.
FOLIO_AMX inline __m512i toBf16x32(__m512 lo, __m512 hi) {
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/// One tile's working memory; every block 64-byte aligned.
struct Scratch {
  uint16_t *qb;  ///< [passes][NV][hd/32][16][32]: Qt as B operands
  float *ot;     ///< [passes][hd][64]
  float *rowMax; ///< [passes][64], log2 units
  float *rowSum; ///< [passes][64]
  uint16_t *kb;  ///< [kSuper][hd]: K rows, A operands
  uint16_t *vt;  ///< [kSuper/32][hd/16][16][32]: V^T, A operands
  float *st;     ///< [2][kChunk][64]: St, double-buffered
  uint16_t *pt;  ///< [2][4][16][32]: Pt as B operands, double-buffered
  float *rowTmp; ///< [hd]: a K row of a bf16/f16 cache, widened
};

Scratch scratchFor(int64_t passes, int64_t hd) {
  size_t qb = size_t(passes * kPassRows * hd) / 2; // in floats
  size_t ot = size_t(passes * kPassRows * hd);
  size_t stat = size_t(passes * kPassRows);
  size_t kv = size_t(kSuper * hd) / 2;
  size_t st = size_t(2 * kChunk * kPassRows);
  size_t pt = size_t(2 * 4 * 16 * 32) / 2;
  size_t tmp = size_t(hd);
  float *p = threadScratch(qb + ot + 2 * stat + 2 * kv + st + pt + tmp);
  Scratch s;
  s.qb = reinterpret_cast<uint16_t *>(p);
  p += qb;
  s.ot = p;
  p += ot;
  s.rowMax = p;
  p += stat;
  s.rowSum = p;
  p += stat;
  s.kb = reinterpret_cast<uint16_t *>(p);
  p += kv;
  s.vt = reinterpret_cast<uint16_t *>(p);
  p += kv;
  s.st = p;
  p += st;
  s.pt = reinterpret_cast<uint16_t *>(p);
  p += pt;
  s.rowTmp = p;
  return s;
}

/// The rows [r0, r0 + nr) of a pass and their positions.
struct PassInfo {
  int64_t r0, nr;
  int64_t minPos, maxPos, firstKey, lastKey, maxLow;
  alignas(64) int32_t pos[kPassRows], lo[kPassRows];
};

void passInfo(const AttentionTile &a, int64_t r0, int64_t nr, PassInfo &p) {
  const int64_t group = a.groupSize;
  p.r0 = r0;
  p.nr = nr;
  // Padding lanes get a position no key matches; their outputs are dropped.
  for (int64_t i = 0; i < kPassRows; ++i) {
    int64_t pos = a.firstPos + (r0 + i) / group;
    p.pos[i] = i < nr ? int32_t(pos) : -1;
    p.lo[i] = i < nr ? int32_t(lowestKey(a, pos)) : 0;
  }
  p.minPos = a.firstPos + r0 / group;
  p.maxPos = a.firstPos + (r0 + nr - 1) / group;
  int64_t low = lowestKey(a, p.minPos);
  p.firstKey = low > a.keyBegin ? low : a.keyBegin;
  p.lastKey = lastTileKey(a, p.maxPos);
  p.maxLow = lowestKey(a, p.maxPos);
}

/// Qt of the pass as B operands, scaled to log2 units and rounded to bf16;
/// Ot and the running max / sum reset.
template <int NV>
FOLIO_AMX void startPass(const AttentionTile &a, const PassInfo &p,
                         uint16_t *qb, float *ot, float *rowMax,
                         float *rowSum) {
  const int64_t hd = a.headDim;
  const __m512 scale = _mm512_set1_ps(a.scale * kLog2e);
  for (int v = 0; v < NV; ++v) {
    const float *src[16];
    for (int64_t i = 0; i < 16; ++i)
      src[i] =
          16 * v + i < p.nr ? queryRow(a, a.q, p.r0 + 16 * v + i) : nullptr;
    for (int64_t d0 = 0; d0 < hd; d0 += 16) {
      __m512 x[16];
      for (int i = 0; i < 16; ++i)
        x[i] = src[i] ? _mm512_mul_ps(_mm512_loadu_ps(src[i] + d0), scale)
                      : _mm512_setzero_ps();
      transpose16(x); // x[c] = Qt[d0 + c][16 rows]
      // B row i of the 32-dim slice d0 / 32 holds dims 2i and 2i + 1.
      uint16_t *dst =
          qb + ((v * (hd / 32) + d0 / 32) * 16 + (d0 % 32) / 2) * 32;
      for (int k = 0; k < 8; ++k)
        _mm512_store_si512(dst + k * 32, pairs(x[2 * k], x[2 * k + 1]));
    }
  }
  for (int64_t i = 0; i < hd * 16 * NV; ++i)
    ot[i] = 0.0f;
  for (int64_t i = 0; i < 16 * NV; ++i) {
    rowMax[i] = -FLT_MAX; // a finite floor: see the AVX-512 tile
    rowSum[i] = 0.0f;
  }
}

/// Keys [s0, s0 + n) (n <= kSuper) into the A layouts, zero-padded to a
/// multiple of kChunk keys so that padding only ever meets p = 0.
FOLIO_AMX void convertKeys(const AttentionTile &a, int64_t s0, int64_t n,
                           uint16_t *kb, uint16_t *vt, float *rowTmp) {
  const int64_t hd = a.headDim;
  const bool convert = a.dtype != DType::F32;
  const KvPool kp = kPoolOf(a), vp = vPoolOf(a);
  const int64_t nPad = (n + kChunk - 1) / kChunk * kChunk;
  KvRowRef vRef[kSuper];
  KvRowCursor cursor(a, s0);
  for (int64_t j = 0; j < n; ++j, cursor.next()) {
    KvRowRef kr = kp.at(cursor);
    const float *k = reinterpret_cast<const float *>(kr.row);
    if (convert) {
      loadKvRowAvx512(kp.format, kr.row, kr.params, rowTmp);
      k = rowTmp;
    }
    for (int64_t d = 0; d < hd; d += 32)
      _mm512_store_si512(
          kb + j * hd + d,
          toBf16x32(_mm512_loadu_ps(k + d), _mm512_loadu_ps(k + d + 16)));
    vRef[j] = vp.at(cursor);
  }
  for (int64_t j = n; j < nPad; ++j)
    for (int64_t d = 0; d < hd; d += 32)
      _mm512_store_si512(kb + j * hd + d, _mm512_setzero_si512());

  // V^T per chunk: 16 x 16 transposes of f32, then the two key halves
  // rounded together into rows of 32 bf16 keys.
  alignas(64) float conv[kChunk * kMaxHeadDim];
  for (int64_t c = 0; c < nPad; c += kChunk) {
    const float *rows[kChunk];
    const char *src[kChunk];
    const uint16_t *par[kChunk];
    int64_t real = n - c < kChunk ? n - c : kChunk;
    for (int64_t i = 0; i < real; ++i) {
      src[i] = vRef[c + i].row;
      par[i] = vRef[c + i].params;
    }
    if (convert)
      loadKvRowsAvx512(vp.format, src, par, real, conv);
    for (int64_t i = 0; i < kChunk; ++i)
      rows[i] = i >= real ? nullptr
                : convert ? conv + i * hd
                          : reinterpret_cast<const float *>(src[i]);
    for (int64_t db = 0; db < hd / 16; ++db) {
      __m512 x[2][16];
      for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 16; ++i) {
          const float *r = rows[16 * h + i];
          x[h][i] = r ? _mm512_loadu_ps(r + 16 * db) : _mm512_setzero_ps();
        }
      transpose16(x[0]);
      transpose16(x[1]);
      uint16_t *dst = vt + ((c / kChunk) * (hd / 16) + db) * 16 * 32;
      for (int d = 0; d < 16; ++d)
        _mm512_store_si512(dst + d * 32, toBf16x32(x[0][d], x[1][d]));
    }
  }
}

/// St = K Qt for one chunk: kb points at its converted keys.
template <int NV>
FOLIO_AMX void scoreChunk(const uint16_t *kb, const uint16_t *qb, float *st,
                          int64_t hd) {
  constexpr int ld = 16 * NV;
  const int64_t slices = hd / 32;
  // St = K Qt, 2 x 2 register blocks: 16-key blocks (A in tiles 4, 5)
  // times 16-row vectors (B in tiles 6, 7) into C tiles 0-3, so that four
  // independent products are in flight before any store waits on one.
  for (int vp = 0; vp < NV; vp += 2) {
    const bool two = vp + 1 < NV;
    _tile_zero(0);
    _tile_zero(2);
    if (two) {
      _tile_zero(1);
      _tile_zero(3);
    }
    for (int64_t ds = 0; ds < slices; ++ds) {
      TLOAD(4, kb + ds * 32, hd * 2);
      TLOAD(5, kb + 16 * hd + ds * 32, hd * 2);
      TLOAD(6, qb + (vp * slices + ds) * 512, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(2, 5, 6);
      if (two) {
        TLOAD(7, qb + ((vp + 1) * slices + ds) * 512, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
      }
    }
    TSTORE(0, st + 16 * vp, ld * 4);
    TSTORE(2, st + 16 * ld + 16 * vp, ld * 4);
    if (two) {
      TSTORE(1, st + 16 * (vp + 1), ld * 4);
      TSTORE(3, st + 16 * ld + 16 * (vp + 1), ld * 4);
    }
  }
}

/// The online softmax of a chunk's scores (as in the AVX-512 tile, log2
/// units): updates the running max and sum, writes P as B operands to pt
/// and the rows' rescale factors to corr.
template <int NV>
FOLIO_AMX void softmaxChunk(const AttentionTile &a, const PassInfo &p,
                            int64_t c0, int64_t n, float *st, uint16_t *pt,
                            float *rowMaxMem, float *rowSumMem, __m512 *corr) {
  constexpr int ld = 16 * NV;
  const bool masked = c0 + n - 1 > p.minPos || c0 < p.maxLow;
  const __m512 cap = _mm512_set1_ps(a.softCap * kLog2e);
  const __m512 invCap =
      _mm512_set1_ps(a.softCap > 0 ? 1 / (a.softCap * kLog2e) : 0);
  for (int v = 0; v < NV; ++v) {
    __m512i vPos = _mm512_load_si512(p.pos + 16 * v);
    __m512i vLo = _mm512_load_si512(p.lo + 16 * v);
    __m512 oldMax = _mm512_load_ps(rowMaxMem + 16 * v);
    __m512 mx = capAndMax(st + 16 * v, n, ld, a.softCap > 0, cap, invCap,
                          masked, vLo, vPos, c0, oldMax);
    // Lazy rescaling: a row keeps its old max unless the chunk's exceeds it
    // by more than kLazyMax, so p <= 2^kLazyMax (harmless in f32 and bf16)
    // and most chunks need no rescale of Ot. The result is the same
    // softmax; only the reference point of the exponentials differs.
    __mmask16 grow = _mm512_cmp_ps_mask(
        mx, _mm512_add_ps(oldMax, _mm512_set1_ps(kLazyMax)), _CMP_GT_OQ);
    mx = _mm512_mask_blend_ps(grow, oldMax, mx);
    corr[v] = _mm512_mask_blend_ps(grow, _mm512_set1_ps(1.0f),
                                   exp2(_mm512_sub_ps(oldMax, mx)));
    __m512 sum = _mm512_setzero_ps();
    __m512 prev = _mm512_setzero_ps();
    // P as B operand rows: keys 2i and 2i + 1 paired per row lane; keys
    // past n are 0.
    uint16_t *pv = pt + v * 512;
    for (int64_t j = 0; j < kChunk; ++j) {
      __m512 e = _mm512_setzero_ps();
      if (j < n) {
        e = exp2(_mm512_sub_ps(_mm512_load_ps(st + j * ld + 16 * v), mx));
        e = _mm512_maskz_mov_ps(
            masked ? visibleLanes(vLo, vPos, c0 + j) : __mmask16(0xffff), e);
        sum = _mm512_add_ps(sum, e);
      }
      if (j % 2 == 1)
        _mm512_store_si512(pv + (j / 2) * 32, pairs(prev, e));
      prev = e;
    }
    __m512 oldSum = _mm512_load_ps(rowSumMem + 16 * v);
    _mm512_store_ps(rowSumMem + 16 * v, _mm512_fmadd_ps(oldSum, corr[v], sum));
    _mm512_store_ps(rowMaxMem + 16 * v, mx);
  }
}

/// Ot = Ot * corr + Vt Pt for one chunk: vt points at its converted V^T.
template <int NV>
FOLIO_AMX void valueChunk(const uint16_t *vt, const uint16_t *pt,
                          const __m512 *corr, float *ot, int64_t hd) {
  constexpr int ld = 16 * NV;
  // Ot = Ot * corr + Vt Pt: the rescale on AVX-512 in memory (skipped
  // when no row's max moved, as in most chunks after the first), then
  // 2 x 2 blocks of C tiles load Ot, accumulate and store: 32-dim blocks
  // of V^T (A in tiles 4, 5) times 16-row vectors of P (B in tiles 6, 7).
  bool rescale = false;
  for (int v = 0; v < NV; ++v)
    rescale |=
        _mm512_cmp_ps_mask(corr[v], _mm512_set1_ps(1.0f), _CMP_NEQ_UQ) != 0;
  if (rescale)
    for (int64_t d = 0; d < hd; ++d)
      for (int v = 0; v < NV; ++v) {
        float *o = ot + d * ld + 16 * v;
        _mm512_store_ps(o, _mm512_mul_ps(_mm512_load_ps(o), corr[v]));
      }
  for (int64_t db = 0; db < hd / 16; db += 2) {
    float *o0 = ot + db * 16 * ld, *o1 = o0 + 16 * ld;
    for (int vp = 0; vp < NV; vp += 2) {
      const bool two = vp + 1 < NV;
      TLOAD(0, o0 + 16 * vp, ld * 4);
      TLOAD(2, o1 + 16 * vp, ld * 4);
      TLOAD(4, vt + db * 512, 64);
      TLOAD(5, vt + (db + 1) * 512, 64);
      TLOAD(6, pt + vp * 512, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(2, 5, 6);
      if (two) {
        TLOAD(1, o0 + 16 * (vp + 1), ld * 4);
        TLOAD(3, o1 + 16 * (vp + 1), ld * 4);
        TLOAD(7, pt + (vp + 1) * 512, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
      }
      TSTORE(0, o0 + 16 * vp, ld * 4);
      TSTORE(2, o1 + 16 * vp, ld * 4);
      if (two) {
        TSTORE(1, o0 + 16 * (vp + 1), ld * 4);
        TSTORE(3, o1 + 16 * (vp + 1), ld * 4);
      }
    }
  }
}

/// Normalises the pass's rows and writes them (or the split's partials).
template <int NV>
FOLIO_AMX void finishPass(const AttentionTile &a, const PassInfo &p,
                          const float *ot, const float *rowMax,
                          const float *rowSum) {
  constexpr int ld = 16 * NV;
  const int64_t hd = a.headDim;
  alignas(64) float inv[ld];
  for (int v = 0; v < NV; ++v) {
    __m512 sum = _mm512_load_ps(rowSum + 16 * v);
    __mmask16 seen = _mm512_cmp_ps_mask(sum, _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_store_ps(inv + 16 * v,
                    _mm512_maskz_div_ps(seen, _mm512_set1_ps(1.0f), sum));
  }
  if (a.partialOut)
    for (int64_t i = 0; i < p.nr; ++i) // log2 units back to natural log
      a.partialLse[p.r0 + i] = rowSum[i] > 0.0f
                                   ? (rowMax[i] + std::log2(rowSum[i])) / kLog2e
                                   : -INFINITY;
  for (int v = 0; v < NV; ++v) {
    __m512 scale = _mm512_load_ps(inv + 16 * v);
    for (int64_t d0 = 0; d0 < hd; d0 += 16) {
      __m512 x[16];
      for (int64_t c = 0; c < 16; ++c)
        x[c] =
            _mm512_mul_ps(_mm512_load_ps(ot + (d0 + c) * ld + 16 * v), scale);
      transpose16(x);
      for (int64_t i = 0; i < 16 && 16 * v + i < p.nr; ++i) {
        int64_t r = p.r0 + 16 * v + i;
        float *dst =
            a.partialOut ? a.partialOut + r * hd : queryRow(a, a.out, r);
        _mm512_storeu_ps(dst + d0, x[i]);
      }
    }
  }
}

template <int NV>
FOLIO_AMX void startPassN(const AttentionTile &a, const PassInfo &p,
                          const Scratch &s, int64_t pass) {
  startPass<NV>(a, p, s.qb + pass * kPassRows * a.headDim,
                s.ot + pass * kPassRows * a.headDim,
                s.rowMax + pass * kPassRows, s.rowSum + pass * kPassRows);
}

/// The pass's chunks among the converted keys [s0, s1), software-pipelined
/// by one chunk: the scores of chunk k + 1 are computed before p.V of
/// chunk k, and its softmax after. So the AMX unit works on the next
/// chunk's scores and this chunk's p.V while AVX-512 runs a softmax, and
/// AMX never loads P just stored by AVX-512 (measured: that wait cost
/// ~17 % of the tile's time). St and Pt are double-buffered.
template <int NV>
FOLIO_AMX void attendSuper(const AttentionTile &a, const PassInfo &p,
                           const Scratch &s, int64_t pass, int64_t s0,
                           int64_t s1) {
  const int64_t hd = a.headDim;
  int64_t lo = p.firstKey > s0 ? p.firstKey : s0;
  int64_t hi = p.lastKey + 1 < s1 ? p.lastKey + 1 : s1;
  const uint16_t *qb = s.qb + pass * kPassRows * hd;
  float *ot = s.ot + pass * kPassRows * hd;
  float *rowMax = s.rowMax + pass * kPassRows;
  float *rowSum = s.rowSum + pass * kPassRows;
  // Chunks stay on the super-chunk's grid, where the V^T blocks are.
  const int64_t first = s0 + (lo - s0) / kChunk * kChunk;
  if (first >= hi)
    return;
  auto size = [&](int64_t c0) {
    return (c0 + kChunk < hi ? c0 + kChunk : hi) - c0;
  };
  float *st[2] = {s.st, s.st + kChunk * kPassRows};
  uint16_t *pt[2] = {s.pt, s.pt + 4 * 512};
  __m512 corr[2][NV];
  scoreChunk<NV>(s.kb + (first - s0) * hd, qb, st[0], hd);
  softmaxChunk<NV>(a, p, first, size(first), st[0], pt[0], rowMax, rowSum,
                   corr[0]);
  for (int64_t c0 = first, k = 0; c0 < hi; c0 += kChunk, k ^= 1) {
    int64_t next = c0 + kChunk;
    if (next < hi)
      scoreChunk<NV>(s.kb + (next - s0) * hd, qb, st[k ^ 1], hd);
    valueChunk<NV>(s.vt + (c0 - s0) / kChunk * (hd / 16) * 512, pt[k], corr[k],
                   ot, hd);
    if (next < hi)
      softmaxChunk<NV>(a, p, next, size(next), st[k ^ 1], pt[k ^ 1], rowMax,
                       rowSum, corr[k ^ 1]);
  }
}

template <int NV>
FOLIO_AMX void finishPassN(const AttentionTile &a, const PassInfo &p,
                           const Scratch &s, int64_t pass) {
  finishPass<NV>(a, p, s.ot + pass * kPassRows * a.headDim,
                 s.rowMax + pass * kPassRows, s.rowSum + pass * kPassRows);
}

/// Calls F<NV> for the pass's vector count.
#define DISPATCH_NV(nr, F, ...)                                                \
  do {                                                                         \
    switch ((nr + 15) / 16) {                                                  \
    case 1:                                                                    \
      F<1>(__VA_ARGS__);                                                       \
      break;                                                                   \
    case 2:                                                                    \
      F<2>(__VA_ARGS__);                                                       \
      break;                                                                   \
    case 3:                                                                    \
      F<3>(__VA_ARGS__);                                                       \
      break;                                                                   \
    default:                                                                   \
      F<4>(__VA_ARGS__);                                                       \
      break;                                                                   \
    }                                                                          \
  } while (0)

FOLIO_AMX void attendAmx(const AttentionTile &a) {
  const int64_t rows = (a.tokenEnd - a.tokenBegin) * a.groupSize;
  const int64_t passes = (rows + kPassRows - 1) / kPassRows;
  const int64_t hd = a.headDim;
  Scratch s = scratchFor(passes, hd);
  std::vector<PassInfo> info(static_cast<size_t>(passes));
  for (int64_t i = 0; i < passes; ++i) {
    int64_t r0 = i * kPassRows;
    passInfo(a, r0, rows - r0 < kPassRows ? rows - r0 : kPassRows, info[i]);
  }

  static const TileConfig config;
  compilerBarrier();
  _tile_loadconfig(&config);
  for (int64_t i = 0; i < passes; ++i)
    DISPATCH_NV(info[i].nr, startPassN, a, info[i], s, i);
  int64_t first = info[0].firstKey, last = info[0].lastKey;
  for (const PassInfo &p : info) {
    first = p.firstKey < first ? p.firstKey : first;
    last = p.lastKey > last ? p.lastKey : last;
  }
  for (int64_t s0 = first; s0 <= last; s0 += kSuper) {
    int64_t s1 = s0 + kSuper < last + 1 ? s0 + kSuper : last + 1;
    convertKeys(a, s0, s1 - s0, s.kb, s.vt, s.rowTmp);
    for (int64_t i = 0; i < passes; ++i)
      if (info[i].firstKey < s1 && info[i].lastKey >= s0)
        DISPATCH_NV(info[i].nr, attendSuper, a, info[i], s, i, s0, s1);
  }
  _tile_release();
  compilerBarrier();
  for (int64_t i = 0; i < passes; ++i)
    DISPATCH_NV(info[i].nr, finishPassN, a, info[i], s, i);
}

AmxMode initialMode() {
  const char *env = std::getenv("FOLIO_ATTENTION_AMX");
  if (env && std::strcmp(env, "0") == 0)
    return AmxMode::Off;
  if (env && std::strcmp(env, "force") == 0)
    return AmxMode::Force;
  return AmxMode::Auto;
}

std::atomic<AmxMode> &modeSlot() {
  static std::atomic<AmxMode> mode{initialMode()};
  return mode;
}

} // namespace

bool amxAttentionUsable(int64_t headDim, bool allowBf16) {
  AmxMode mode = modeSlot().load(std::memory_order_relaxed);
  if (mode == AmxMode::Off || (mode == AmxMode::Auto && !allowBf16))
    return false;
  if (headDim % 32 != 0 || headDim > kMaxHeadDim)
    return false;
  return amxActive();
}

AmxMode setAmxAttentionMode(AmxMode mode) { return modeSlot().exchange(mode); }

void attendTileAmx(const AttentionTile &tile) {
  // Decode-like tiles keep f32 products unless a test forces the tile.
  if ((tile.tokenEnd - tile.tokenBegin) * tile.groupSize < kAmxMinRows ||
      (tile.decodeLike &&
       modeSlot().load(std::memory_order_relaxed) != AmxMode::Force))
    return attendTileAvx512(tile);
  attendAmx(tile);
}

} // namespace folio::cpu::detail
