//===- GemvAvx2.cpp - AVX2 small-M kernel (f32, bf16, f16 weights) --------===//
//
// The tier for CPUs without AVX-512 (Zen 1-3, Intel before Skylake-SP and
// its client parts). Decode is bound by reading the weights, as on AVX-512
// (GemvAvx512.cpp says how that kernel is built), in 16 registers of 8
// lanes:
//   - one weight row at a time, so the rows, contiguous in memory, are one
//     sequential stream, with a software prefetch a fixed distance ahead
//     on the first pass (prefetchAhead: the hardware prefetchers stop at
//     4 KiB page boundaries). Four rows at a time (four streams, the next
//     four prefetched per line, the AVX-512 kernel's way) read bf16 at only
//     0.62-0.66 of the read loop on the Zen build machine; one stream reads
//     0.85-0.89;
//   - 32 weights per step in four accumulators per x row, summed in the
//     same order for every M, so a row's result does not depend on M;
//   - bf16 rows against x in the pair-split layout (Gemv.h, blocks of 32):
//     a 32-byte load of 16 weights gives the 8 even ones with `<< 16` and
//     the 8 odd ones with `& 0xffff0000`, exact f32 without a widening
//     shuffle; the first 16 weights of a block pair with x's pair-split
//     elements 0-7 (even) and 16-23 (odd), the second 16 with 8-15 and
//     24-31;
//   - f16 rows through vcvtph2ps, f32 rows as they are.
// Up to three x rows share each converted weight vector (a block is
// worked in halves, so 12 accumulators and two weight vectors fit the 16
// registers); more x rows (a verify step, a small batch) take further
// passes over the row, which is then in L1. Three rather than two took the
// bf16 GEMV of a 110M token's linears at M = 3-8 from 1.42-1.43 / 1.94-2.00
// / 3.05-3.07 to 1.33-1.34 / 1.82-1.84 / 2.92-2.94 times M = 1's
// (`FOLIO_CPU_ISA=avx2 folio-linear-bench 3 1 verify`, M = 3 / 5 / 8, on
// an Intel Xeon limited to AVX2). The elements past the last whole 32 are
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

/// Bytes ahead of the current weight line that a row's first pass asks
/// for: rows are contiguous, so this runs into the next rows as one
/// sequential stream. Measured on the Zen build machine (one token's
/// GEMVs, in-run ratio to the read loop): 16-bit weights best at 1 KiB
/// (0.85-0.89; 0.71-0.77 at 0.5 and 2 KiB), f32 at 256-512 bytes
/// (0.86-0.89; 0.77 at 1 KiB, 0.65 at 4 KiB).
template <W T> constexpr int64_t prefetchAhead() {
  return T == W::F32 ? 512 : 1024;
}

/// One weight row n by MR x rows from m; 32 weights per step in four
/// accumulators per x row (for bf16: the even and odd weights of each half
/// block), summed in the same order for every MR, so a row's result does
/// not depend on M.
template <W T, int MR>
FOLIO_AVX2 void tile(const GemvArgs &a, int64_t n, int64_t m) {
  using S = std::conditional_t<T == W::F32, float, uint16_t>;
  const int64_t k = a.k, kVec = k / 32 * 32;
  const S *w = static_cast<const S *>(a.w) + n * k;
  const bool prefetch = m == 0;
  __m256 acc[MR][4];
  FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    FOLIO_UNROLL
  for (int c = 0; c < 4; ++c)
    acc[j][c] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < kVec; kk += 32) {
    if (prefetch) {
      const char *line = reinterpret_cast<const char *>(w + kk);
      _mm_prefetch(line + prefetchAhead<T>(), _MM_HINT_T0);
      if constexpr (T == W::F32) // 128 bytes per step
        _mm_prefetch(line + prefetchAhead<T>() + 64, _MM_HINT_T0);
    }
    // Half a block (16 weights, two vectors) at a time: 4 x MR
    // accumulators and two weight vectors fit the 16 registers up to MR =
    // 3. Each accumulator takes the same products in the same order as
    // with the whole block at once.
    FOLIO_UNROLL
    for (int h = 0; h < 2; ++h) {
      __m256 wv[2];
      if constexpr (T == W::Bf16) {
        const __m256i oddMask = _mm256_set1_epi32(int(0xffff0000u));
        __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + kk) + h);
        wv[0] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        wv[1] = _mm256_castsi256_ps(_mm256_and_si256(v, oddMask));
      } else {
        FOLIO_UNROLL
        for (int c = 0; c < 2; ++c) {
          if constexpr (T == W::F16)
            wv[c] = loadF16(w + kk + 8 * (2 * h + c));
          else
            wv[c] = _mm256_loadu_ps(w + kk + 8 * (2 * h + c));
        }
      }
      FOLIO_UNROLL
      for (int j = 0; j < MR; ++j) {
        // bf16: even weights of half h pair with pair-split x at 8h, odd
        // ones at 16 + 8h; the others with plain x.
        const float *x = T == W::Bf16 ? a.xPairs + (m + j) * a.kPairs + kk
                                      : a.x + (m + j) * k + kk;
        FOLIO_UNROLL
        for (int c = 2 * h; c < 2 * h + 2; ++c) {
          const int at = T == W::Bf16 ? (c % 2) * 16 + (c / 2) * 8 : 8 * c;
          acc[j][c] = _mm256_fmadd_ps(wv[c - 2 * h], _mm256_loadu_ps(x + at),
                                      acc[j][c]);
        }
      }
    }
  }
  const float b = a.bias ? a.bias[n] : 0.0f;
  FOLIO_UNROLL
  for (int j = 0; j < MR; ++j) {
    float s = reduceAdd(_mm256_add_ps(_mm256_add_ps(acc[j][0], acc[j][1]),
                                      _mm256_add_ps(acc[j][2], acc[j][3])));
    const float *x = a.x + (m + j) * k;
    for (int64_t kk = kVec; kk < k; ++kk)
      s += x[kk] * weightAt<T>(a.w, n * k + kk);
    a.y[(m + j) * a.n + n] = s + b;
  }
}

template <W T>
FOLIO_AVX2 void run(const GemvArgs &a, int64_t nBegin, int64_t nEnd) {
  for (int64_t n = nBegin; n < nEnd; ++n) {
    int64_t m = 0;
    for (; m + 3 <= a.m; m += 3)
      tile<T, 3>(a, n, m);
    if (a.m - m == 2)
      tile<T, 2>(a, n, m);
    else if (a.m - m == 1)
      tile<T, 1>(a, n, m);
  }
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
