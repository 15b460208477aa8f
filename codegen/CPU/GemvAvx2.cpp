//===- GemvAvx2.cpp - AVX2 small-M kernel (f32, bf16, f16 weights) --------===//
//
// The tier for CPUs without AVX-512 (Zen 1-3, Intel before Skylake-SP and
// its client parts). Decode is bound by reading the weights, as on AVX-512
// (GemvAvx512.cpp says how that kernel is built); the same ideas in 16
// registers of 8 lanes:
//   - four weight rows at a time: four sequential streams, and the same
//     offsets of the next four rows prefetched once per 64-byte line (the
//     hardware prefetchers stop at 4 KiB page boundaries);
//   - bf16 rows against x in the pair-split layout (Gemv.h, blocks of 32):
//     a 32-byte load of 16 weights gives the 8 even ones with `<< 16` and
//     the 8 odd ones with `& 0xffff0000`, exact f32 without a widening
//     shuffle; the first 16 weights of a block pair with x's pair-split
//     elements 0-7 (even) and 16-23 (odd), the second 16 with 8-15 and
//     24-31;
//   - f16 rows through vcvtph2ps, f32 rows as they are.
// Four rows by up to two x rows keep 8 accumulators and the converted
// weights in registers, x comes in as memory operands of the FMAs. More x
// rows (a verify step, a small batch, f16 prefill) take further passes over
// the same four rows, which are then in L1 or L2 (4 rows x 2 K bytes). The
// elements past the last whole vector (K not a multiple of 32 or 8) are
// summed in scalar code from the plain x.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/GemvPanelAvx2.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

enum class W { F32, Bf16, F16 };

#define FOLIO_UNROLL _Pragma("GCC unroll 8")

template <W T> inline float weightAt(const void *w, int64_t i) {
  if constexpr (T == W::Bf16)
    return bf16ToFloat(static_cast<const uint16_t *>(w)[i]);
  else if constexpr (T == W::F16)
    return f16ToFloat(static_cast<const uint16_t *>(w)[i]);
  else
    return static_cast<const float *>(w)[i];
}

/// Weight elements one vector step covers.
template <W T> constexpr int64_t stepOf() {
  return T == W::Bf16 ? kGemvPairBlock : 8;
}

/// NR weight rows from n by MR x rows from m.
template <W T, int NR, int MR>
FOLIO_AVX2 void tile(const GemvArgs &a, int64_t n, int64_t m) {
  using S = std::conditional_t<T == W::F32, float, uint16_t>;
  constexpr int64_t step = stepOf<T>();
  const int64_t k = a.k;
  const int64_t kVec = k / step * step;
  const S *w = static_cast<const S *>(a.w) + n * k;
  const char *next = reinterpret_cast<const char *>(w + NR * k);
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m256 acc[NR][MR];
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i)
    FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    acc[i][j] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < kVec; kk += step) {
    // One 64-byte line per row: every step for bf16 (32 x 2 bytes), every
    // other for f16, every step (half a line, harmless) for f32.
    if (prefetch && (T != W::F16 || (kk & 31) == 0)) {
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(next + (i * k + kk) * int64_t(sizeof(S)), _MM_HINT_T0);
    }
    if constexpr (T == W::Bf16) {
      const __m256i oddMask = _mm256_set1_epi32(int(0xffff0000u));
      const float *xp = a.xPairs + m * a.kPairs + kk;
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        const __m256i *src = reinterpret_cast<const __m256i *>(w + i * k + kk);
        FOLIO_UNROLL
        for (int h = 0; h < 2; ++h) {
          __m256i v = _mm256_loadu_si256(src + h);
          __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
          __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(v, oddMask));
          FOLIO_UNROLL
          for (int j = 0; j < MR; ++j) {
            const float *x = xp + j * a.kPairs + 8 * h;
            acc[i][j] = _mm256_fmadd_ps(even, _mm256_loadu_ps(x), acc[i][j]);
            acc[i][j] =
                _mm256_fmadd_ps(odd, _mm256_loadu_ps(x + 16), acc[i][j]);
          }
        }
      }
    } else {
      FOLIO_UNROLL
      for (int i = 0; i < NR; ++i) {
        __m256 wv;
        if constexpr (T == W::F16)
          wv = loadF16(w + i * k + kk);
        else
          wv = _mm256_loadu_ps(w + i * k + kk);
        FOLIO_UNROLL
        for (int j = 0; j < MR; ++j)
          acc[i][j] = _mm256_fmadd_ps(
              wv, _mm256_loadu_ps(a.x + (m + j) * k + kk), acc[i][j]);
      }
    }
  }
  FOLIO_UNROLL
  for (int i = 0; i < NR; ++i) {
    float b = a.bias ? a.bias[n + i] : 0.0f;
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      float s = reduceAdd(acc[i][j]);
      const float *x = a.x + (m + j) * k;
      for (int64_t kk = kVec; kk < k; ++kk)
        s += x[kk] * weightAt<T>(a.w, (n + i) * k + kk);
      a.y[(m + j) * a.n + n + i] = s + b;
    }
  }
}

template <W T, int NR> FOLIO_AVX2 void rowsOfX(const GemvArgs &a, int64_t n) {
  int64_t m = 0;
  for (; m + 2 <= a.m; m += 2)
    tile<T, NR, 2>(a, n, m);
  if (m < a.m)
    tile<T, NR, 1>(a, n, m);
}

template <W T>
FOLIO_AVX2 void run(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<T, 4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<T, 1>(a, n);
}

/// 8 weights of rows n.. widened to f32 (fillPanelAvx2).
template <W T> struct Widen {
  const void *w;
  int64_t k;
  FOLIO_AVX2 __m256 operator()(int64_t r, int64_t c) const {
    if constexpr (T == W::F32)
      return _mm256_loadu_ps(static_cast<const float *>(w) + r * k + c);
    const uint16_t *h = static_cast<const uint16_t *>(w) + r * k + c;
    if constexpr (T == W::F16)
      return loadF16(h);
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(
                              reinterpret_cast<const __m128i *>(h))),
                          16));
  }
};

template <W T>
FOLIO_AVX2 void panels(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  // Per worker thread: one panel of widened weights.
  thread_local std::vector<float> panel;
  const size_t elem = T == W::F32 ? 4 : 2;
  for (int64_t n = nBegin; n < nEnd; n += kPanelRowsAvx2) {
    const int64_t rows = std::min(kPanelRowsAvx2, nEnd - n);
    const void *w = static_cast<const char *>(a.w) + size_t(n * a.k) * elem;
    fillPanelAvx2(
        a.k, rows, panel, Widen<T>{w, a.k},
        [&](int64_t r, int64_t c) { return weightAt<T>(w, r * a.k + c); });
    panelGemmAvx2(a.x, a.m, a.k, panel.data(), rows, /*scales=*/nullptr,
                  a.bias ? a.bias + n : nullptr, a.y + n, a.n);
  }
}

} // namespace

void gemmPanelAvx2(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  if (a.bf16)
    panels<W::Bf16>(a, nBegin, nEnd);
  else if (a.f16)
    panels<W::F16>(a, nBegin, nEnd);
  else
    panels<W::F32>(a, nBegin, nEnd);
}

void gemvAvx2(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  if (a.bf16)
    run<W::Bf16>(a, nBegin, nEnd);
  else if (a.f16)
    run<W::F16>(a, nBegin, nEnd);
  else
    run<W::F32>(a, nBegin, nEnd);
}

} // namespace folio::cpu::detail
