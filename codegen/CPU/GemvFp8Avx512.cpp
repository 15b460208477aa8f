//===- GemvFp8Avx512.cpp - AVX-512 fp8_e4m3-weight kernel -----------------===//
//
// Weight-only fp8: decode reads one byte per weight and converts it in
// registers. An e4m3 code's exponent (4 bits, bias 7) and mantissa (3
// bits) fit f16's fields: the code shifted into the high byte of a 16-bit
// lane and arithmetically right by one (then bit 14 cleared) is an f16
// whose value is the code's times 2^-8, subnormals included, and vcvtph2ps
// widens it exactly (MXCSR.DAZ does not apply to it). That is four integer
// ops and a convert per 16 weights, no table: a 256-entry f32 table needs
// 16 registers or a gather per 16 weights (vpermi2ps covers 32 entries),
// and building the f32 bits directly has to special-case the subnormal
// codes. The 2^8 goes into the row's scale. The packer never writes the
// NaN codes (0x7f, 0xff; weights are finite), so they are not handled.
// Structure as GemvInt8Avx512.cpp: four weight rows (four prefetch streams)
// by up to four x rows; prefill converts 32 rows once into an f32 panel
// (GemvPanelAvx512.cpp). With AVX512-VBMI decode looks the codes up as bf16
// bytes instead (tileVbmi below), which leaves the FMA ports more room.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::avx512;

template <int NR, int MR>
FOLIO_AVX512 void tile(const GemvFp8Args &a, int64_t n, int64_t m) {
  const int64_t k = a.k;
  const uint8_t *w = a.w + n * k;
  const uint8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < k; kk += 32) {
    int64_t left = k - kk;
    __mmask32 msk = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
    __mmask16 m0 = __mmask16(msk), m1 = __mmask16(msk >> 16);
    if (prefetch && kk % 64 == 0)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                     _MM_HINT_T0);
    for (int i = 0; i < NR; ++i) {
      __m512 lo, hi;
      e4m3Codes32(w + i * k + kk, msk, lo, hi);
      for (int j = 0; j < MR; ++j) {
        const float *x = a.x + (m + j) * k + kk;
        acc[i][j] =
            _mm512_fmadd_ps(lo, _mm512_maskz_loadu_ps(m0, x), acc[i][j]);
        acc[i][j] =
            _mm512_fmadd_ps(hi, _mm512_maskz_loadu_ps(m1, x + 16), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    float scale = a.scales[n + i] * 256.0f;
    float b = a.bias ? a.bias[n + i] : 0.0f;
    for (int j = 0; j < MR; ++j)
      a.y[(m + j) * a.n + n + i] = _mm512_reduce_add_ps(acc[i][j]) * scale + b;
  }
}

template <int NR> FOLIO_AVX512 void rowsOfX(const GemvFp8Args &a, int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tile<NR, 4>(a, n, m);
  switch (a.m - m) {
  case 3:
    return tile<NR, 3>(a, n, m);
  case 2:
    return tile<NR, 2>(a, n, m);
  case 1:
    return tile<NR, 1>(a, n, m);
  default:
    return;
  }
}

/// Rows [n, n + rows) dequantized into the k-major panel, then x over it.
/// Each row is converted 32 codes at a time as the GEMV does into `row`,
/// then the rows are transposed into the panel in registers.
FOLIO_AVX512 void panelRows(const GemvFp8Args &a, int64_t n, int64_t rows,
                            std::vector<float> &panel,
                            std::vector<float> &row) {
  const int64_t k = a.k, ld = (k + 31) / 32 * 32;
  panel.resize(size_t(k * kDequantPanelRows));
  row.resize(size_t(rows * ld));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *w = a.w + (n + r) * k;
    float *dst = row.data() + r * ld;
    __m512 scale = _mm512_set1_ps(a.scales[n + r] * 256.0f);
    for (int64_t kk = 0; kk < k; kk += 32) {
      int64_t left = k - kk;
      __mmask32 msk = left >= 32 ? ~__mmask32(0) : (__mmask32(1) << left) - 1;
      __m512 lo, hi;
      e4m3Codes32(w + kk, msk, lo, hi);
      _mm512_storeu_ps(dst + kk, _mm512_mul_ps(lo, scale));
      _mm512_storeu_ps(dst + kk + 16, _mm512_mul_ps(hi, scale));
    }
  }
  panelFromRowsAvx512(row.data(), ld, rows, k, panel.data());
  panelGemmAvx512(a.x, a.m, k, panel.data(), rows,
                  a.bias ? a.bias + n : nullptr, a.y + n, a.n);
}

#define FOLIO_AVX512_VBMI                                                      \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,fma")))

/// bf16 bits of every e4m3 magnitude (codes 0-126; 127 is NaN, which the
/// packer never writes): low bytes, then high bytes. Each value is exact in
/// bf16 (3 mantissa bits, exponents 2^-9 to 2^8).
struct E4M3Bf16Bytes {
  alignas(64) uint8_t lo[128];
  alignas(64) uint8_t hi[128];
  E4M3Bf16Bytes() {
    for (unsigned c = 0; c < 128; ++c) {
      uint32_t bits = c == 127 ? 0 : floatBits(fp8E4M3ToFloat(uint8_t(c)));
      lo[c] = uint8_t(bits >> 16);
      hi[c] = uint8_t(bits >> 24);
    }
  }
};
const E4M3Bf16Bytes &e4m3Bf16Bytes() {
  static const E4M3Bf16Bytes t;
  return t;
}

/// Where a 64-code block's values land after the byte lookups and
/// unpacks below: lane t of vector v holds code vbmiCode(v, t).
/// unpacklo/hi_epi8 interleave within 128-bit lanes (codes 16L + 0..7 and
/// 16L + 8..15 as 16-bit words), and each 32-bit lane's low and high words
/// become the "even" and "odd" f32 vectors (<< 16, & 0xffff0000).
constexpr int vbmiCode(int v, int t) {
  return 16 * (t / 4) + 8 * (v / 2) + 2 * (t % 4) + v % 2;
}

/// x rows [0, m) rearranged per block of 64 into the lane order above,
/// zero past k.
void arrangeX(const GemvFp8Args &a, std::vector<float> &xr) {
  const int64_t blocks = (a.k + 63) / 64;
  xr.assign(size_t(a.m * blocks * 64), 0.0f);
  for (int64_t j = 0; j < a.m; ++j)
    for (int64_t b = 0; b < blocks; ++b)
      for (int i = 0; i < 64; ++i) {
        int64_t c = b * 64 + vbmiCode(i / 16, i % 16);
        if (c < a.k)
          xr[size_t((j * blocks + b) * 64 + i)] = a.x[j * a.k + c];
      }
}

/// The tile of `tile` above with 64 codes a pass turned into f32 by two
/// byte lookups (vpermi2b over the 128 magnitudes' bf16 bytes), the sign
/// or-ed in, two unpacks and a shift or an and per 16 values: about 10
/// port-0/5 operations per 64 codes where the f16 route takes about 18.
/// x comes rearranged (arrangeX).
template <int NR, int MR>
FOLIO_AVX512_VBMI void tileVbmi(const GemvFp8Args &a, const float *xr,
                                int64_t n, int64_t m) {
  const int64_t k = a.k, blocks = (k + 63) / 64;
  const uint8_t *w = a.w + n * k;
  const uint8_t *next = w + NR * k;
  const bool prefetch = m == 0 && n + 2 * NR <= a.n;
  const E4M3Bf16Bytes &t = e4m3Bf16Bytes();
  const __m512i lo0 = _mm512_load_si512(t.lo),
                lo1 = _mm512_load_si512(t.lo + 64);
  const __m512i hi0 = _mm512_load_si512(t.hi),
                hi1 = _mm512_load_si512(t.hi + 64);
  const __m512i low7 = _mm512_set1_epi8(0x7f),
                sign = _mm512_set1_epi8(char(0x80));
  const __m512i highWord = _mm512_set1_epi32(int(0xffff0000u));
  __m512 acc[NR][MR];
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < MR; ++j)
      acc[i][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t kk = b * 64, left = k - kk;
    const __mmask64 msk =
        left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
    if (prefetch)
      for (int i = 0; i < NR; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(next + i * k + kk),
                     _MM_HINT_T0);
    for (int i = 0; i < NR; ++i) {
      __m512i codes = _mm512_maskz_loadu_epi8(msk, w + i * k + kk);
      __m512i mag = _mm512_and_si512(codes, low7);
      __m512i lo = _mm512_permutex2var_epi8(lo0, mag, lo1);
      __m512i hi = _mm512_permutex2var_epi8(hi0, mag, hi1);
      hi = _mm512_ternarylogic_epi32(hi, codes, sign, 0xF8); // hi | (c & s)
      __m512i w0 = _mm512_unpacklo_epi8(lo, hi),
              w1 = _mm512_unpackhi_epi8(lo, hi);
      __m512 v[4] = {_mm512_castsi512_ps(_mm512_slli_epi32(w0, 16)),
                     _mm512_castsi512_ps(_mm512_and_si512(w0, highWord)),
                     _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16)),
                     _mm512_castsi512_ps(_mm512_and_si512(w1, highWord))};
      for (int j = 0; j < MR; ++j) {
        const float *x = xr + ((m + j) * blocks + b) * 64;
        for (int q = 0; q < 4; ++q)
          acc[i][j] =
              _mm512_fmadd_ps(v[q], _mm512_loadu_ps(x + 16 * q), acc[i][j]);
      }
    }
  }
  for (int i = 0; i < NR; ++i) {
    float scale = a.scales[n + i];
    float bias = a.bias ? a.bias[n + i] : 0.0f;
    for (int j = 0; j < MR; ++j)
      a.y[(m + j) * a.n + n + i] =
          _mm512_reduce_add_ps(acc[i][j]) * scale + bias;
  }
}

template <int NR>
FOLIO_AVX512_VBMI void rowsOfXVbmi(const GemvFp8Args &a, const float *xr,
                                   int64_t n) {
  int64_t m = 0;
  for (; m + 4 <= a.m; m += 4)
    tileVbmi<NR, 4>(a, xr, n, m);
  switch (a.m - m) {
  case 3:
    return tileVbmi<NR, 3>(a, xr, n, m);
  case 2:
    return tileVbmi<NR, 2>(a, xr, n, m);
  case 1:
    return tileVbmi<NR, 1>(a, xr, n, m);
  default:
    return;
  }
}

} // namespace

void gemvFp8Avx512Cvt(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd) {
  int64_t n = nBegin;
  if (a.m > kFp8GemvMaxRows) {
    // Per worker thread: one panel of dequantized weights.
    thread_local std::vector<float> panel, row;
    for (; n < nEnd; n += kDequantPanelRows)
      panelRows(a, n, std::min(kDequantPanelRows, nEnd - n), panel, row);
    return;
  }
  for (; n + 4 <= nEnd; n += 4)
    rowsOfX<4>(a, n);
  for (; n < nEnd; ++n)
    rowsOfX<1>(a, n);
}

void gemvFp8Avx512Vbmi(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd) {
  if (a.m > kFp8GemvMaxRows)
    return gemvFp8Avx512Cvt(a, nBegin, nEnd);
  // Per worker thread: x in the lookup's lane order (M x K floats, small
  // beside the rows' weights).
  thread_local std::vector<float> xr;
  arrangeX(a, xr);
  int64_t n = nBegin;
  for (; n + 4 <= nEnd; n += 4)
    rowsOfXVbmi<4>(a, xr.data(), n);
  for (; n < nEnd; ++n)
    rowsOfXVbmi<1>(a, xr.data(), n);
}

void gemvFp8Avx512(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd) {
  return hostFeatures().avx512vbmi ? gemvFp8Avx512Vbmi(a, nBegin, nEnd)
                                   : gemvFp8Avx512Cvt(a, nBegin, nEnd);
}

} // namespace folio::cpu::detail
