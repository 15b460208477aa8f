//===- GemvPanelAvx2.h - Filling the AVX2 prefill panel ---------*- C++ -*-===//
//
// Internal to the AVX2 kernels (include after Avx2Math.h). The panel is
// k-major (`panel[c * kPanelRowsAvx2 + r]`), the weights row-major, so
// filling it is a transpose. Done element by element it cost about 1 ns per
// weight on the Zen build machine, as much as a 16-row GEMM over the panel;
// here each 8 rows by 8 columns are converted as 8 row vectors (the
// kernel's own in-register conversion) and transposed in registers (24
// shuffles), then stored as 8 panel lines.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_GEMVPANELAVX2_H
#define FOLIO_CODEGEN_CPU_GEMVPANELAVX2_H

#include "codegen/CPU/Gemv.h"

#include <vector>

namespace folio::cpu::detail {

/// Transposes the 8 x 8 floats in r (row i in r[i]) in place.
FOLIO_AVX2 inline void transpose8x8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/// Fills panel[k, kPanelRowsAvx2] with weight rows 0 .. rows - 1 (zero in
/// the columns past them). `load8(r, c)` returns weights c .. c + 8 of row
/// r (c a multiple of 8, c + 8 <= k); `load1(r, c)` one weight, for the
/// columns past the last whole 8.
template <typename Load8, typename Load1>
FOLIO_AVX2 void fillPanelAvx2(int64_t k, int64_t rows,
                              std::vector<float> &panel, Load8 load8,
                              Load1 load1) {
  panel.resize(size_t(k * kPanelRowsAvx2));
  const int64_t kVec = k / 8 * 8;
  for (int64_t g = 0; g < kPanelRowsAvx2; g += 8)
    for (int64_t c = 0; c < kVec; c += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i)
        r[i] = g + i < rows ? load8(g + i, c) : _mm256_setzero_ps();
      transpose8x8(r);
      for (int i = 0; i < 8; ++i)
        _mm256_storeu_ps(panel.data() + (c + i) * kPanelRowsAvx2 + g, r[i]);
    }
  for (int64_t c = kVec; c < k; ++c)
    for (int64_t r = 0; r < kPanelRowsAvx2; ++r)
      panel[size_t(c * kPanelRowsAvx2 + r)] = r < rows ? load1(r, c) : 0.0f;
}

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_GEMVPANELAVX2_H
