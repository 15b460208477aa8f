//===- GemvAvx512.cpp - AVX-512 small-M kernel ----------------------------===//
//
// Decode is bound by reading the weights, so the kernel's job is to keep
// several sequential streams in flight and spend little per byte: four
// weight rows at a time (four streams for the prefetchers), bf16 widened to
// f32 by a shift (exact, cheaper than vdpbf16ps's rounding of x to bf16),
// up to four x rows reusing each loaded weight vector.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

template <bool Bf16>
FOLIO_AVX512 inline __m512 loadW(const void *w, int64_t i, __mmask16 m) {
  if constexpr (Bf16)
    return loadBf16(static_cast<const uint16_t *>(w) + i, m);
  else
    return _mm512_maskz_loadu_ps(m, static_cast<const float *>(w) + i);
}

/// NR weight rows starting at n times MR x rows starting at m. While it
/// streams its rows it prefetches the same offsets of the next NR rows: a
/// row is often one 4 KiB page, and the hardware prefetchers stop at page
/// boundaries, so without this every row would start with a cold stream.
template <bool Bf16, int NR, int MR>
FOLIO_AVX512 void tile(const GemvArgs &a, int64_t n, int64_t m) {
  constexpr int64_t elemBytes = Bf16 ? 2 : 4;
  const char *next =
      static_cast<const char *>(a.w) + (n + NR) * a.k * elemBytes;
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  const int64_t k = a.k;
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    if (m == 0 && n + 2 * NR <= a.n)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(next + (i * k + kk) * elemBytes, _MM_HINT_T0);
    __m512 xv[MR];
    for (int j = 0; j < MR; ++j)
      xv[j] = _mm512_loadu_ps(a.x + (m + j) * k + kk);
    for (int i = 0; i < NR; ++i) {
      __m512 wv = loadW<Bf16>(a.w, (n + i) * k + kk, __mmask16(0xffff));
      for (int j = 0; j < MR; ++j)
        acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  if (kk < k) {
    __mmask16 msk = tailMask(k - kk);
    __m512 xv[MR];
    for (int j = 0; j < MR; ++j)
      xv[j] = _mm512_maskz_loadu_ps(msk, a.x + (m + j) * k + kk);
    for (int i = 0; i < NR; ++i) {
      __m512 wv = loadW<Bf16>(a.w, (n + i) * k + kk, msk);
      for (int j = 0; j < MR; ++j)
        acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < NR; ++i) {
    float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int j = 0; j < MR; ++j)
      a.y[(m + j) * a.n + n + i] = _mm512_reduce_add_ps(acc[i][j]) + b;
  }
}

template <bool Bf16, int NR>
FOLIO_AVX512 void rowsOfX(const GemvArgs &a, int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tile<Bf16, NR, 4>(a, n, m);
  switch (a.m - m) {
  case 3:
    return tile<Bf16, NR, 3>(a, n, m);
  case 2:
    return tile<Bf16, NR, 2>(a, n, m);
  case 1:
    return tile<Bf16, NR, 1>(a, n, m);
  default:
    return;
  }
}

template <bool Bf16>
FOLIO_AVX512 void run(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<Bf16, 4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<Bf16, 1>(a, n);
}

} // namespace

void gemvAvx512(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  if (a.bf16)
    run<true>(a, nBegin, nEnd);
  else
    run<false>(a, nBegin, nEnd);
}

} // namespace folio::cpu::detail
