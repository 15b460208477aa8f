//===- GemvAvx512.cpp - AVX-512 small-M kernel ----------------------------===//
//
// Decode is bound by reading the weights, so the kernel's job is to keep
// several sequential streams in flight and spend few instructions per byte
// (fewer micro-ops leave the out-of-order core room for more loads in
// flight): four weight rows at a time (four streams for the prefetchers), up
// to four x rows reusing each loaded weight vector.
//
// bf16 rows: one 64-byte load brings 32 weights; `<< 16` and
// `& 0xffff0000` give the even and the odd ones as exact f32 (no widening
// shuffle, and x stays f32, unlike vdpbf16ps), multiplied by x in the
// matching pair-split layout (Gemv.h). Per 64 bytes of weights that is one
// load and two logic ops, against two loads, two widening moves and two
// shifts when each half is widened in order: in the model's GEMV sequence
// this took the bf16 GEMV 2-20 % closer to the read loop (noisy; see
// docs/cpu-kernels.md).
//
// Five to eight rows of x (a speculative verify step: k drafts plus one)
// take a tile of their own, two weight rows by all of x's rows, so each
// weight line is still read once: the four-row tiles keep x in registers
// and would need a second pass over the weights for rows five to eight.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

#include <type_traits>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

/// Writes a tile's NR x MR dot products (plus bias) to y: the
/// accumulators summed in one tree (reduceAddMany), x row by x row.
template <int NR, int MR>
FOLIO_AVX512 inline void storeTile(const GemvArgs &a, int64_t n, int64_t m,
                                   const __m512 (&acc)[NR][MR]) {
  __m512 v[NR * MR];
  _Pragma("GCC unroll 16") for (int j = 0; j < MR; ++j)
      _Pragma("GCC unroll 16") for (int i = 0; i < NR; ++i) v[j * NR + i] =
          acc[i][j];
  float sums[16];
  reduceAddMany<NR * MR>(v, sums);
  for (int j = 0; j < MR; ++j)
    for (int i = 0; i < NR; ++i)
      a.y[(m + j) * a.n + n + i] =
          sums[j * NR + i] + (a.bias ? a.bias[n + i] : 0.0f);
}

/// NR bf16 weight rows starting at n times MR x rows starting at m. While it
/// streams its rows it prefetches the same offsets of the next NR rows, once
/// per 64-byte line: a row is often a whole 4 KiB page, and the hardware
/// prefetchers stop at page boundaries, so without this every row would
/// start with a cold stream (measured: half the bandwidth).
template <int NR, int MR>
FOLIO_AVX512 void tileBf16(const GemvArgs &a, int64_t n, int64_t m) {
  const int64_t k = a.k;
  const uint16_t *w = static_cast<const uint16_t *>(a.w) + n * k;
  const char *next = reinterpret_cast<const char *>(w + NR * k);
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  const __m512i oddMask = _mm512_set1_epi32(int(0xffff0000u));
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  // The last block may be partial: a masked load zeroes the missing
  // weights (and cannot fault past the row), the x padding is zero too.
  for (int64_t kk = 0; kk < k; kk += kGemvPairBlock) {
    __mmask32 msk = k - kk >= kGemvPairBlock ? __mmask32(0xffffffffu)
                                             : __mmask32((1u << (k - kk)) - 1u);
    if (prefetch)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(next + (i * k + kk) * 2, _MM_HINT_T0);
    __m512 xe[MR], xo[MR];
    for (int j = 0; j < MR; ++j) {
      const float *xp = a.xPairs + (m + j) * a.kPairs + kk;
      xe[j] = _mm512_loadu_ps(xp);
      xo[j] = _mm512_loadu_ps(xp + 16);
    }
    for (int i = 0; i < NR; ++i) {
      __m512i v = _mm512_maskz_loadu_epi16(msk, w + i * k + kk);
      __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(v, oddMask));
      for (int j = 0; j < MR; ++j) {
        acc[i][j] = _mm512_fmadd_ps(even, xe[j], acc[i][j]);
        acc[i][j] = _mm512_fmadd_ps(odd, xo[j], acc[i][j]);
      }
    }
  }
  storeTile<NR, MR>(a, n, m, acc);
}

/// The f32 counterpart: 16 weights (one line) per load, prefetch as above.
/// With `F16` the weights are f16 (vcvtph2ps, 16 per half line).
template <int NR, int MR, bool F16 = false>
FOLIO_AVX512 void tileF32(const GemvArgs &a, int64_t n, int64_t m) {
  const int64_t k = a.k;
  using T = std::conditional_t<F16, uint16_t, float>;
  const T *w = static_cast<const T *>(a.w) + n * k;
  const char *next = reinterpret_cast<const char *>(w + NR * k);
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; kk += 16) {
    __mmask16 msk = k - kk >= 16 ? __mmask16(0xffff) : tailMask(k - kk);
    if (prefetch && (!F16 || (kk & 31) == 0))
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(next + (i * k + kk) * int64_t(sizeof(T)), _MM_HINT_T0);
    __m512 xv[MR];
    for (int j = 0; j < MR; ++j)
      xv[j] = _mm512_maskz_loadu_ps(msk, a.x + (m + j) * k + kk);
    for (int i = 0; i < NR; ++i) {
      __m512 wv;
      if constexpr (F16)
        wv = loadF16(reinterpret_cast<const uint16_t *>(w + i * k + kk), msk);
      else
        wv = _mm512_maskz_loadu_ps(
            msk, reinterpret_cast<const float *>(w + i * k + kk));
      for (int j = 0; j < MR; ++j)
        acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  storeTile<NR, MR>(a, n, m, acc);
}

enum class W { F32, Bf16, F16 };

// Every loop over the tile's rows fully unrolled: GCC 12 otherwise keeps
// the 2 x 7 accumulators of an odd-sized tile on the stack, a store and a
// load per FMA (seen in perf annotate).
#define FOLIO_UNROLL _Pragma("GCC unroll 8")

/// Rows of x one wide tile takes at most.
constexpr int kWideRows = 8;

/// NR weight rows (1 or 2) times MR <= kWideRows x rows: 2 x 8 accumulators
/// and the converted weights stay in registers, and each x vector is loaded
/// where it is used (an L1 hit that folds into the FMA) instead of held, so
/// all of x's rows share one read of each weight line. Prefetches as the
/// tiles above.
template <W T, int NR, int MR>
FOLIO_AVX512 void tileWide(const GemvArgs &a, int64_t n, int64_t m) {
  const int64_t k = a.k;
  using S = std::conditional_t<T == W::F32, float, uint16_t>;
  const S *w = static_cast<const S *>(a.w) + n * k;
  const char *next = reinterpret_cast<const char *>(w + NR * k);
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m512 acc[NR][MR];
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i)
    FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    acc[i][j] = _mm512_setzero_ps();
  if constexpr (T == W::Bf16) {
    const __m512i oddMask = _mm512_set1_epi32(int(0xffff0000u));
    for (int64_t kk = 0; kk < k; kk += kGemvPairBlock) {
      __mmask32 msk = k - kk >= kGemvPairBlock
                          ? __mmask32(0xffffffffu)
                          : __mmask32((1u << (k - kk)) - 1u);
      if (prefetch)
        for (int i = 0; i < NR; ++i)
          _mm_prefetch(next + (i * k + kk) * 2, _MM_HINT_T0);
      __m512 even[NR], odd[NR];
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        __m512i v = _mm512_maskz_loadu_epi16(msk, w + i * k + kk);
        even[i] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        odd[i] = _mm512_castsi512_ps(_mm512_and_si512(v, oddMask));
      }
      const float *xp = a.xPairs + m * a.kPairs + kk;
      FOLIO_UNROLL
      for (int j = 0; j < MR; ++j) {
        __m512 xe = _mm512_loadu_ps(xp + j * a.kPairs);
        __m512 xo = _mm512_loadu_ps(xp + j * a.kPairs + 16);
        FOLIO_UNROLL
        for (int i = 0; i < NR; ++i) {
          acc[i][j] = _mm512_fmadd_ps(even[i], xe, acc[i][j]);
          acc[i][j] = _mm512_fmadd_ps(odd[i], xo, acc[i][j]);
        }
      }
    }
  } else {
    for (int64_t kk = 0; kk < k; kk += 16) {
      __mmask16 msk = k - kk >= 16 ? __mmask16(0xffff) : tailMask(k - kk);
      if (prefetch && (T == W::F32 || (kk & 31) == 0))
        for (int i = 0; i < NR; ++i)
          _mm_prefetch(next + (i * k + kk) * int64_t(sizeof(S)), _MM_HINT_T0);
      __m512 wv[NR];
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        if constexpr (T == W::F16)
          wv[i] = loadF16(w + i * k + kk, msk);
        else
          wv[i] = _mm512_maskz_loadu_ps(msk, w + i * k + kk);
      }
      FOLIO_UNROLL
      for (int j = 0; j < MR; ++j) {
        __m512 xv = _mm512_maskz_loadu_ps(msk, a.x + (m + j) * k + kk);
        FOLIO_UNROLL
        for (int i = 0; i < NR; ++i)
          acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
      }
    }
  }
  storeTile<NR, MR>(a, n, m, acc);
}

/// x's rows in wide tiles of kWideRows, then one for the rest.
template <W T, int NR>
FOLIO_AVX512 void wideRowsOfX(const GemvArgs &a, int64_t n) {
  int64_t m = 0;
  for (; m + kWideRows <= a.m; m += kWideRows)
    tileWide<T, NR, kWideRows>(a, n, m);
  switch (a.m - m) {
  case 7:
    return tileWide<T, NR, 7>(a, n, m);
  case 6:
    return tileWide<T, NR, 6>(a, n, m);
  case 5:
    return tileWide<T, NR, 5>(a, n, m);
  case 4:
    return tileWide<T, NR, 4>(a, n, m);
  case 3:
    return tileWide<T, NR, 3>(a, n, m);
  case 2:
    return tileWide<T, NR, 2>(a, n, m);
  case 1:
    return tileWide<T, NR, 1>(a, n, m);
  default:
    return;
  }
}

template <W T, int NR, int MR>
FOLIO_AVX512 inline void tile(const GemvArgs &a, int64_t n, int64_t m) {
  if constexpr (T == W::Bf16)
    tileBf16<NR, MR>(a, n, m);
  else
    tileF32<NR, MR, T == W::F16>(a, n, m);
}

template <W T, int NR> FOLIO_AVX512 void rowsOfX(const GemvArgs &a, int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tile<T, NR, 4>(a, n, m);
  switch (a.m - m) {
  case 3:
    return tile<T, NR, 3>(a, n, m);
  case 2:
    return tile<T, NR, 2>(a, n, m);
  case 1:
    return tile<T, NR, 1>(a, n, m);
  default:
    return;
  }
}

template <W T>
FOLIO_AVX512 void run(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m > 4) {
    for (; n + 2 <= nEnd; n += 2)
      wideRowsOfX<T, 2>(a, n);
    for (; n < nEnd; ++n)
      wideRowsOfX<T, 1>(a, n);
    return;
  }
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<T, 4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<T, 1>(a, n);
}

} // namespace

void gemvAvx512(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  if (a.bf16)
    run<W::Bf16>(a, nBegin, nEnd);
  else if (a.f16)
    run<W::F16>(a, nBegin, nEnd);
  else
    run<W::F32>(a, nBegin, nEnd);
}

} // namespace folio::cpu::detail
