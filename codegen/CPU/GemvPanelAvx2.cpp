//===- GemvPanelAvx2.cpp - AVX2 prefill GEMM on a dequantized panel -------===//
//
// The AVX2 fp8 and int4 kernels' path for M > kConvertTileRows
// (prefill, batched decode): 16 weight rows at a time are converted once
// into an f32 panel, k-major (`panel[kk * 16 + r]`, 48 KiB at K = 768, in
// L2), and every x row runs over it, so each weight is converted once per
// call instead of once per few x rows. The micro-kernel is the usual one
// for 16 registers: 6 x rows by two vectors of outputs (12 accumulators),
// each x element broadcast against both.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx2Math.h"
#include "codegen/CPU/Gemv.h"

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx2;

// Every loop over the tile's rows fully unrolled, and the two output
// vectors in arrays of their own, or GCC 12 keeps the accumulators on the
// stack (a store per FMA; seen in the disassembly).
#define FOLIO_UNROLL _Pragma("GCC unroll 8")

/// Scales, bias and store of one vector of outputs (columns c0 .. c0 + 8,
/// `left` of them valid) for every x row.
template <int MR>
FOLIO_AVX2 inline void store(const __m256 (&acc)[MR], int64_t c0, int64_t left,
                             const float *scales, const float *bias, float *y,
                             int64_t ldy) {
  __m256i msk = tailMask(left >= 8 ? 8 : left);
  __m256 s =
      scales ? _mm256_maskload_ps(scales + c0, msk) : _mm256_set1_ps(1.0f);
  __m256 b = bias ? _mm256_maskload_ps(bias + c0, msk) : _mm256_setzero_ps();
  FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    _mm256_maskstore_ps(y + j * ldy + c0, msk, _mm256_fmadd_ps(acc[j], s, b));
}

template <int MR>
FOLIO_AVX2 void panelTile(const float *x, int64_t k, const float *panel,
                          int64_t cols, const float *scales, const float *bias,
                          float *y, int64_t ldy) {
  __m256 lo[MR], hi[MR];
  FOLIO_UNROLL
  for (int j = 0; j < MR; ++j)
    lo[j] = hi[j] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    __m256 w0 = _mm256_loadu_ps(panel + kk * kPanelRowsAvx2);
    __m256 w1 = _mm256_loadu_ps(panel + kk * kPanelRowsAvx2 + 8);
    FOLIO_UNROLL
    for (int j = 0; j < MR; ++j) {
      __m256 xb = _mm256_broadcast_ss(x + j * k + kk);
      lo[j] = _mm256_fmadd_ps(w0, xb, lo[j]);
      hi[j] = _mm256_fmadd_ps(w1, xb, hi[j]);
    }
  }
  store<MR>(lo, 0, cols, scales, bias, y, ldy);
  if (cols > 8)
    store<MR>(hi, 8, cols - 8, scales, bias, y, ldy);
}

} // namespace

void panelGemmAvx2(const float *x, int64_t m, int64_t k, const float *panel,
                   int64_t cols, const float *scales, const float *bias,
                   float *y, int64_t ldy) {
  int64_t r = 0;
  for (; r + 6 <= m; r += 6)
    panelTile<6>(x + r * k, k, panel, cols, scales, bias, y + r * ldy, ldy);
  switch (m - r) {
  case 5:
    return panelTile<5>(x + r * k, k, panel, cols, scales, bias, y + r * ldy,
                        ldy);
  case 4:
    return panelTile<4>(x + r * k, k, panel, cols, scales, bias, y + r * ldy,
                        ldy);
  case 3:
    return panelTile<3>(x + r * k, k, panel, cols, scales, bias, y + r * ldy,
                        ldy);
  case 2:
    return panelTile<2>(x + r * k, k, panel, cols, scales, bias, y + r * ldy,
                        ldy);
  case 1:
    return panelTile<1>(x + r * k, k, panel, cols, scales, bias, y + r * ldy,
                        ldy);
  default:
    return;
  }
}

} // namespace folio::cpu::detail
