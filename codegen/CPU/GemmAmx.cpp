//===- GemmAmx.cpp - Prefill GEMM on AMX tiles for quantized weights ------===//
//
// Per 32 output columns (two B tiles) the weight codes (int8, fp8) or the
// dequantized weights (int4) are converted once to bf16 into a panel in the
// B operand's layout: per 32 weights along K, a 16 x 16 matrix of 32-bit
// pairs (row p, column c = weights 2p and 2p + 1 of weight row c), which
// is the transpose of 16 weight rows' converted values read as pairs, done
// in registers (transposePairs). Then every 32 rows of x (two A
// tiles, x already bf16 and zero padded) run over the panel with four C
// tiles of 16 x 16 f32, K in steps of 32. The C tiles go through a small
// buffer to the epilogue, which applies the row scale (int8, fp8) and bias
// and adds the int8 outlier columns in f32 (GemvInt8Avx512.cpp's rule).
//
// The panel is K x 32 bf16 (48 KiB at K = 768), so it stays in L2 for all
// of x. Remainder rows of x run one A tile when 16 or fewer are left. int4
// has a second panel (what bf16 left out of each weight) and a second x
// (likewise), and three tile products per block (GemmAmx.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/GemmAmx.h"

#include "codegen/CPU/AmxTiles.h"
#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::amx;
using namespace folio::cpu::avx512;

/// Output columns per panel: two B tiles.
constexpr int64_t kPanelCols = 32;
/// bf16 elements in one tile (16 rows of 64 bytes).
constexpr int64_t kTileElems = 512;

/// 32 codes along K (zero past `msk`) as 32 bf16 in order; exact, since
/// every code value has at most 7 significant bits. fp8 values are code
/// x 2^-8 (e4m3Codes32); the 2^8 goes into the scale.
template <AmxCodes C>
FOLIO_BF16_AVX512 inline __m512i codesBf16(const uint8_t *p, __mmask32 msk) {
  __m512 lo, hi;
  if constexpr (C == AmxCodes::Int8) {
    __m256i raw = _mm256_maskz_loadu_epi8(msk, p);
    lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(raw)));
    hi = _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm256_extracti128_si256(raw, 1)));
  } else {
    e4m3Codes32(p, msk, lo, hi);
  }
  // cvtne2ps2bf16(hi, lo) = lo[0..15], hi[0..15].
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/// Transposes 16 x 16 32-bit elements in registers (Avx512Math.h's
/// transpose16 on the same bits).
FOLIO_BF16_AVX512 inline void transposePairs(__m512i r[16]) {
  __m512 f[16];
  for (int i = 0; i < 16; ++i)
    f[i] = _mm512_castsi512_ps(r[i]);
  transpose16(f);
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_castps_si512(f[i]);
}

/// The bf16 of each of 32 floats (lo then hi), and in `rest` the bf16 of
/// what that rounding left out.
FOLIO_BF16_AVX512 inline __m512i splitBf16(__m512 lo, __m512 hi,
                                           __m512i &rest) {
  __m512i b = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
  __m512 bLo = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(b)), 16));
  __m512 bHi = _mm512_castsi512_ps(_mm512_slli_epi32(
      _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(b, 1)), 16));
  rest = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(hi, bHi),
                                      _mm512_sub_ps(lo, bLo));
  return b;
}

/// f16: 32 weights from p (zero past `msk`) as bf16 hi + lo, exactly.
FOLIO_BF16_AVX512 inline __m512i f16Bf16(const uint16_t *p, __mmask32 msk,
                                         __m512i &rest) {
  const __m512i raw = _mm512_maskz_loadu_epi16(msk, p);
  return splitBf16(_mm512_cvtph_ps(_mm512_castsi512_si256(raw)),
                   _mm512_cvtph_ps(_mm512_extracti64x4_epi64(raw, 1)), rest);
}

/// int4: weights 32 blk .. 32 blk + 31 of row r (zero from k on) as 32
/// bf16. The block layout (WeightPack.h) puts weight 16j + l in nibble j of
/// 32-bit word l, so a shift gives 16 consecutive weights' codes in lane
/// order, and vpermps on the group's 16 values (min + q * scale, one FMA)
/// dequantizes them, as the GEMV does. `rest` receives what bf16 left out
/// of each, rounded to bf16 in turn.
FOLIO_BF16_AVX512 inline __m512i int4Bf16(const AmxGemmArgs &a, int64_t r,
                                          int64_t blk, __m512i &rest) {
  const int64_t k = a.k, base = 32 * blk;
  const uint8_t *row = static_cast<const uint8_t *>(a.w) + r * int4RowBytes(k);
  __m512i v = _mm512_loadu_si512(row + base / kInt4Block * (kInt4Block / 2));
  const int j = int(base % kInt4Block / 16);
  const uint16_t *p =
      a.params + (r * int4Groups(k, a.groupSize) + base / a.groupSize) * 2;
  __m128 sm = _mm_cvtph_ps(_mm_cvtsi32_si128(int(p[0] | p[1] << 16)));
  const __m512 iota =
      _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 lut = _mm512_fmadd_ps(iota, _mm512_broadcastss_ps(sm),
                               _mm512_broadcastss_ps(_mm_movehdup_ps(sm)));
  int64_t left = k - base;
  __mmask16 m0 = left >= 16 ? __mmask16(0xffff) : tailMask(left);
  __mmask16 m1 = left >= 32  ? __mmask16(0xffff)
                 : left > 16 ? tailMask(left - 16)
                             : __mmask16(0);
  __m512 lo = _mm512_maskz_permutexvar_ps(m0, _mm512_srli_epi32(v, 4 * j), lut);
  __m512 hi =
      _mm512_maskz_permutexvar_ps(m1, _mm512_srli_epi32(v, 4 * (j + 1)), lut);
  return splitBf16(lo, hi, rest);
}

/// Weight rows [n, n + cols) (cols <= 32; zero beyond) as B tiles:
/// panel[(block * 2 + t) * 512 ..] is the tile of rows n + 16t .. for
/// codes 32 block .. 32 block + 31. `panel` is 64-byte aligned. int4 and
/// f16 also write what bf16 left out of their weights to panelLo, in the
/// same layout.
template <AmxCodes C>
FOLIO_BF16_AVX512 void fillPanel(const AmxGemmArgs &a, int64_t n, int64_t cols,
                                 uint16_t *panel, uint16_t *panelLo) {
  const uint8_t *w = static_cast<const uint8_t *>(a.w);
  const int64_t k = a.k, blocks = amxPaddedK(k) / 32;
  for (int t = 0; t < 2; ++t)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t left = k - 32 * blk;
      __mmask32 msk = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
      __m512i r[16], rest[16];
      for (int i = 0; i < 16; ++i) {
        int64_t c = 16 * t + i;
        rest[i] = _mm512_setzero_si512();
        if (c >= cols)
          r[i] = _mm512_setzero_si512();
        else if constexpr (C == AmxCodes::Int4)
          r[i] = int4Bf16(a, n + c, blk, rest[i]);
        else if constexpr (C == AmxCodes::F16)
          r[i] = f16Bf16(static_cast<const uint16_t *>(a.w) + (n + c) * k +
                             32 * blk,
                         msk, rest[i]);
        else
          r[i] = codesBf16<C>(w + (n + c) * k + 32 * blk, msk);
      }
      transposePairs(r);
      uint16_t *dst = panel + (blk * 2 + t) * kTileElems;
      for (int p = 0; p < 16; ++p)
        _mm512_store_si512(dst + 32 * p, r[p]);
      if constexpr (amxSplitCodes(C)) {
        transposePairs(rest);
        dst = panelLo + (blk * 2 + t) * kTileElems;
        for (int p = 0; p < 16; ++p)
          _mm512_store_si512(dst + 32 * p, rest[p]);
      }
    }
}

/// C tiles 0, 1 (and 2, 3 with TwoA) += the A rows at a0 (and a1) times
/// B tiles 6, 7, loaded first from b unless it is null (then the ones
/// already there).
template <bool TwoA>
FOLIO_AMX inline void products(const uint16_t *a0, const uint16_t *a1,
                               int64_t stride, const uint16_t *b) {
  if (b) {
    TLOAD(6, b, 64);
    TLOAD(7, b + kTileElems, 64);
  }
  TLOAD(4, a0, stride);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  if constexpr (TwoA) {
    TLOAD(5, a1, stride);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
}

/// C[32][32] (rows 16+ only with TwoA) = x rows m .. m + 31 times the
/// panel, through tiles 0-3.
template <bool TwoA>
FOLIO_AMX void multiply(const AmxGemmArgs &a, const uint16_t *panel,
                        const uint16_t *panelLo, int64_t m, float *c) {
  const int64_t kp = amxPaddedK(a.k), blocks = kp / 32, stride = kp * 2;
  const uint16_t *x0 = a.xb + m * kp, *x1 = x0 + 16 * kp;
  const uint16_t *l0 = a.xbLo ? a.xbLo + m * kp : nullptr;
  const uint16_t *l1 = l0 ? l0 + 16 * kp : nullptr;
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (TwoA) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t at = 32 * blk, tiles = 2 * blk * kTileElems;
    products<TwoA>(x0 + at, x1 + at, stride, panel + tiles);
    if (l0) // x's remainder against the same weights
      products<TwoA>(l0 + at, l1 + at, stride, nullptr);
    if (panelLo) // the weights' remainder against x
      products<TwoA>(x0 + at, x1 + at, stride, panelLo + tiles);
  }
  TSTORE(0, c, 128);
  TSTORE(1, c + 16, 128);
  if constexpr (TwoA) {
    TSTORE(2, c + 16 * 32, 128);
    TSTORE(3, c + 16 * 32 + 16, 128);
  }
}

/// y[m .. m + rows, n .. n + cols] from C: scale, bias, outliers.
FOLIO_BF16_AVX512 void epilogue(const AmxGemmArgs &a, const float *c, int64_t m,
                                int64_t rows, int64_t n, int64_t cols,
                                float scaleMul) {
  for (int h = 0; h < 2; ++h) {
    int64_t left = cols - 16 * h;
    if (left <= 0)
      break;
    __mmask16 msk = left >= 16 ? __mmask16(0xffff) : tailMask(left);
    // int4 has no row scale.
    __m512 scale =
        a.scales
            ? _mm512_mul_ps(_mm512_maskz_loadu_ps(msk, a.scales + n + 16 * h),
                            _mm512_set1_ps(scaleMul))
            : _mm512_set1_ps(1.0f);
    __m512 bias = a.bias ? _mm512_maskz_loadu_ps(msk, a.bias + n + 16 * h)
                         : _mm512_setzero_ps();
    for (int64_t i = 0; i < rows; ++i)
      _mm512_mask_storeu_ps(
          a.y + (m + i) * a.n + n + 16 * h, msk,
          _mm512_fmadd_ps(_mm512_loadu_ps(c + i * 32 + 16 * h), scale, bias));
  }
  if (a.numOutliers)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t r = 0; r < cols; ++r)
        a.y[(m + i) * a.n + n + r] +=
            dotBf16(a.outliers + (n + r) * a.numOutliers,
                    a.xOut + (m + i) * a.numOutliers, a.numOutliers);
}

template <AmxCodes C>
FOLIO_AMX void run(const AmxGemmArgs &a, int64_t nBegin, int64_t nEnd) {
  // Per worker thread: one panel, 64-byte aligned for the tile stores.
  thread_local std::vector<uint16_t> storage;
  const size_t panelElems = size_t(amxPaddedK(a.k) * kPanelCols);
  const bool split = amxSplitCodes(C);
  storage.resize(panelElems * (split ? 2 : 1) + 32);
  uint16_t *panel = reinterpret_cast<uint16_t *>(
      (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63));
  uint16_t *panelLo = split ? panel + panelElems : nullptr;
  alignas(64) float c[32 * 32];
  const float scaleMul = C == AmxCodes::Fp8E4M3 ? 256.0f : 1.0f;

  static const TileConfig config;
  compilerBarrier();
  _tile_loadconfig(&config);
  for (int64_t n = nBegin; n < nEnd; n += kPanelCols) {
    int64_t cols = std::min(kPanelCols, nEnd - n);
    fillPanel<C>(a, n, cols, panel, panelLo);
    int64_t m = 0;
    for (; a.m - m > 16; m += 32) {
      multiply<true>(a, panel, panelLo, m, c);
      epilogue(a, c, m, std::min<int64_t>(32, a.m - m), n, cols, scaleMul);
    }
    if (m < a.m) {
      multiply<false>(a, panel, panelLo, m, c);
      epilogue(a, c, m, a.m - m, n, cols, scaleMul);
    }
  }
  _tile_release();
  compilerBarrier();
}

/// Rows of x per vdpbf16ps pass: 12 rows x 2 column vectors of
/// accumulators, with the two B vectors and a broadcast, fill 27 of the
/// 32 registers.
constexpr int kDotRows = 12;

/// C[MR][32] = x rows m .. m + MR - 1 times the panel (the B tiles' rows
/// are the vdpbf16ps operands: per pair p of a 32-weight block, 16
/// columns' weights 2p and 2p + 1), one broadcast bf16 pair of x per row.
template <int MR>
FOLIO_BF16_AVX512 void multiplyDot(const AmxGemmArgs &a, const uint16_t *panel,
                                   int64_t m, float *c) {
  const int64_t kp = amxPaddedK(a.k), blocks = kp / 32;
  __m512 acc[MR][2];
  for (int i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const uint16_t *x = a.xb + m * kp;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const uint16_t *b = panel + 2 * blk * kTileElems;
    for (int p = 0; p < 16; ++p) {
      __m512bh b0 = (__m512bh)_mm512_load_si512(b + 32 * p);
      __m512bh b1 = (__m512bh)_mm512_load_si512(b + kTileElems + 32 * p);
      for (int i = 0; i < MR; ++i) {
        // A broadcast from memory: a load, no shuffle-port uop.
        __m512bh xi = (__m512bh)_mm512_broadcastss_ps(_mm_load_ss(
            reinterpret_cast<const float *>(x + i * kp + 32 * blk + 2 * p)));
        acc[i][0] = _mm512_dpbf16_ps(acc[i][0], xi, b0);
        acc[i][1] = _mm512_dpbf16_ps(acc[i][1], xi, b1);
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    _mm512_storeu_ps(c + 32 * i, acc[i][0]);
    _mm512_storeu_ps(c + 32 * i + 16, acc[i][1]);
  }
}

template <AmxCodes C>
FOLIO_BF16_AVX512 void runDot(const AmxGemmArgs &a, int64_t nBegin,
                              int64_t nEnd) {
  static_assert(!amxSplitCodes(C), "int4 and f16 need hi + lo products");
  thread_local std::vector<uint16_t> storage;
  storage.resize(size_t(amxPaddedK(a.k) * kPanelCols) + 32);
  uint16_t *panel = reinterpret_cast<uint16_t *>(
      (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63));
  alignas(64) float c[kDotRows * 32];
  const float scaleMul = C == AmxCodes::Fp8E4M3 ? 256.0f : 1.0f;
  for (int64_t n = nBegin; n < nEnd; n += kPanelCols) {
    int64_t cols = std::min(kPanelCols, nEnd - n);
    fillPanel<C>(a, n, cols, panel, nullptr);
    int64_t m = 0;
    for (; a.m - m >= kDotRows; m += kDotRows) {
      multiplyDot<kDotRows>(a, panel, m, c);
      epilogue(a, c, m, kDotRows, n, cols, scaleMul);
    }
    for (; a.m - m >= 4; m += 4) {
      multiplyDot<4>(a, panel, m, c);
      epilogue(a, c, m, 4, n, cols, scaleMul);
    }
    for (; m < a.m; ++m) {
      multiplyDot<1>(a, panel, m, c);
      epilogue(a, c, m, 1, n, cols, scaleMul);
    }
  }
}

} // namespace

FOLIO_BF16_AVX512 void packXForAmx(const float *x, int64_t m, int64_t k,
                                   uint16_t *dst, uint16_t *dstLo) {
  const int64_t kp = amxPaddedK(k), mp = amxPaddedRows(m);
  for (int64_t i = 0; i < mp; ++i) {
    uint16_t *d = dst + i * kp;
    for (int64_t kk = 0; kk < kp; kk += 16) {
      __m256i v = _mm256_setzero_si256(), lo = v;
      if (i < m && kk < k) {
        __mmask16 msk = k - kk >= 16 ? __mmask16(0xffff) : tailMask(k - kk);
        __m512 xs = _mm512_maskz_loadu_ps(msk, x + i * k + kk);
        v = (__m256i)_mm512_cvtneps_pbh(xs);
        if (dstLo) {
          __m512 hi = _mm512_castsi512_ps(
              _mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
          lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(xs, hi));
        }
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(d + kk), v);
      if (dstLo)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dstLo + i * kp + kk),
                            lo);
    }
  }
}

void gemmBf16Dot(const AmxGemmArgs &a, int64_t nBegin, int64_t nEnd) {
  switch (a.codes) {
  case AmxCodes::Int8:
    return runDot<AmxCodes::Int8>(a, nBegin, nEnd);
  case AmxCodes::Fp8E4M3:
    return runDot<AmxCodes::Fp8E4M3>(a, nBegin, nEnd);
  case AmxCodes::Int4:
  case AmxCodes::F16:
    break;
  }
  // A caller's bug, not an input's: Linear.cpp's bf16GemmFor keeps int4
  // and f16 on the f32 panel. Never run their bytes as int8 codes.
  std::fprintf(stderr, "folio: gemmBf16Dot takes int8 and fp8 codes, not "
                       "int4 or f16\n");
  std::abort();
}

void gemmAmx(const AmxGemmArgs &a, int64_t nBegin, int64_t nEnd) {
  switch (a.codes) {
  case AmxCodes::Int8:
    return run<AmxCodes::Int8>(a, nBegin, nEnd);
  case AmxCodes::Fp8E4M3:
    return run<AmxCodes::Fp8E4M3>(a, nBegin, nEnd);
  case AmxCodes::Int4:
    return run<AmxCodes::Int4>(a, nBegin, nEnd);
  case AmxCodes::F16:
    return run<AmxCodes::F16>(a, nBegin, nEnd);
  }
}

} // namespace folio::cpu::detail
