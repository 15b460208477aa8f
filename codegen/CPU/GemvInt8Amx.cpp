//===- GemvInt8Amx.cpp - int8 weights times int16 x codes on AMX-INT8 -----===//
//
// The int8 GEMV's product (GemvInt8Avx512.cpp: int8 weight codes times x
// in 16-bit fixed point, exact integer sums) on AMX-INT8 tiles, for the
// rows of a verify step, a batched decode or a prefill. Each x code splits
// exactly into code = 256 hi + lo, hi = code >> 8 (signed, -128..127) and
// lo = code & 255 (unsigned), so w . code = 256 (w . hi) + w . lo, two tile
// products (tdpbssd, signed x signed; tdpbsud, signed x unsigned) whose
// int32 sums are exact: each product is at most 128 x 255 in magnitude, so
// up to kInt8AmxMaxCodes codes never leave int32. The row's integer sum is
// then the GEMV's, and the epilogue applies int8GemvOutput's operations in
// its order: every row is bitwise what the GEMV gives it alone, at any
// batch size.
//
// The weights are the A operand as they are stored (16 rows of 64 codes,
// one tile load with the row stride), so nothing is converted or packed
// per call; x is the B operand (packXInt8ForAmx, 16 rows of x per pass).
// The GEMV widens every weight and multiplies it once per row of x, so a
// verify step's 5 rows cost it about 4x one row where the weights are in
// cache; the tiles take 16 rows of x in the same product (Gemv.h,
// kInt8AmxMinRows, has the figures). Each group of 32 weight rows runs
// every pass of x while its codes are in L1 or L2, so a prefill reads the
// weights from memory once too.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AmxTiles.h"
#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace folio::cpu::detail {

namespace {

using namespace folio::cpu::amx;
using namespace folio::cpu::avx512;

/// Codes per tile step (one A tile row: 64 int8).
constexpr int64_t kStep = 64;
/// Bytes of one B tile: 16 quads of codes by 16 rows of x by 4.
constexpr int64_t kBTileBytes = 1024;
/// Weight rows per pass over K: two A tiles.
constexpr int64_t kGroupRows = 32;

/// 64 codes of x row `row` (int16) as hi and lo bytes into the B tiles of
/// their step: byte e of quad q of x row `col` at q * 64 + col * 4 + e.
FOLIO_AVX512 void packStep(const int16_t *codes, int64_t col, uint8_t *hiTile,
                           uint8_t *loTile) {
  alignas(64) uint8_t hi[kStep], lo[kStep];
  for (int h = 0; h < 2; ++h) {
    __m512i c = _mm512_loadu_si512(codes + 32 * h);
    _mm256_store_si256(reinterpret_cast<__m256i *>(hi + 32 * h),
                       _mm512_cvtepi16_epi8(_mm512_srai_epi16(c, 8)));
    _mm256_store_si256(
        reinterpret_cast<__m256i *>(lo + 32 * h),
        _mm512_cvtepi16_epi8(_mm512_and_si512(c, _mm512_set1_epi16(0xff))));
  }
  for (int64_t q = 0; q < kStep / 4; ++q) {
    std::memcpy(hiTile + q * 64 + col * 4, hi + 4 * q, 4);
    std::memcpy(loTile + q * 64 + col * 4, lo + 4 * q, 4);
  }
}

/// C tiles 0, 1 (weight rows 0-15 of the group, hi and lo) and 2, 3 (rows
/// 16-31) += the group's codes [step * 64, +64) times x's B tiles.
FOLIO_AMX_INT8 inline void products(const int8_t *w, int64_t stride,
                                    const uint8_t *xStep) {
  TLOAD(6, xStep, 64);
  TLOAD(7, xStep + kBTileBytes, 64);
  TLOAD(4, w, stride);
  _tile_dpbssd(0, 4, 6);
  _tile_dpbsud(1, 4, 7);
  TLOAD(5, w + 16 * stride, stride);
  _tile_dpbssd(2, 5, 6);
  _tile_dpbsud(3, 5, 7);
}

/// float(256 hi + lo) of 8 lanes, the sum in 64 bits.
FOLIO_AMX_INT8 inline __m256 sumsToFloat(__m256i hi, __m256i lo) {
  return _mm512_cvtepi64_ps(
      _mm512_add_epi64(_mm512_slli_epi64(_mm512_cvtepi32_epi64(hi), 8),
                       _mm512_cvtepi32_epi64(lo)));
}

/// y[m + j][n + i] for i < rows, j < cols from the tiles' sums, hi[i][j]
/// and lo[i][j] (16 x 16 int32): transposed in registers so that each row
/// of x takes one vector of outputs, each int8GemvOutput's operations in
/// its order (float(sum) * step * scale + outlier + bias, rounded to
/// nearest at each), so every output is the GEMV's bits.
FOLIO_AMX_INT8 void epilogue(const GemvInt8Args &a, const int32_t *hi,
                             const int32_t *lo, int64_t n, int64_t rows,
                             int64_t m, int64_t cols) {
  __m512 h[16], l[16];
  for (int i = 0; i < 16; ++i) {
    h[i] = _mm512_load_ps(reinterpret_cast<const float *>(hi + 16 * i));
    l[i] = _mm512_load_ps(reinterpret_cast<const float *>(lo + 16 * i));
  }
  transpose16(h);
  transpose16(l);
  const __mmask16 msk = rows >= 16 ? __mmask16(0xffff) : tailMask(rows);
  const __m512 scale = _mm512_maskz_loadu_ps(msk, a.scales + n);
  const __m512 bias =
      a.bias ? _mm512_maskz_loadu_ps(msk, a.bias + n) : _mm512_setzero_ps();
  for (int64_t j = 0; j < cols; ++j) {
    const __m512i hj = _mm512_castps_si512(h[j]),
                  lj = _mm512_castps_si512(l[j]);
    __m512 sum = _mm512_insertf32x8(
        _mm512_castps256_ps512(sumsToFloat(_mm512_castsi512_si256(hj),
                                           _mm512_castsi512_si256(lj))),
        sumsToFloat(_mm512_extracti64x4_epi64(hj, 1),
                    _mm512_extracti64x4_epi64(lj, 1)),
        1);
    __m512 outlier = _mm512_setzero_ps();
    if (a.numOutliers) {
      alignas(64) float o[16] = {};
      for (int64_t i = 0; i < rows; ++i)
        o[i] = dotBf16(a.outliers + (n + i) * a.numOutliers,
                       a.xOut + (m + j) * a.numOutliers, a.numOutliers);
      outlier = _mm512_load_ps(o);
    }
    __m512 y = _mm512_mul_ps(sum, _mm512_set1_ps(a.xSteps[m + j]));
    y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(y, scale), outlier), bias);
    _mm512_mask_storeu_ps(a.y + (m + j) * a.n + n, msk, y);
  }
}

/// Weight rows [n, n + rows) (rows <= 32) times every row of x, a pass of
/// kInt8AmxPassRows rows at a time, so the group's codes are read from
/// memory once and from L1 or L2 by the later passes. `padded` holds the
/// rows copied with zero padding (rows < 32); else the codes are read in
/// place and the last, partial step of K goes through `tail`.
FOLIO_AMX_INT8 void group(const GemvInt8Args &a, int64_t n, int64_t rows,
                          std::vector<int8_t> &padded, int8_t *tail) {
  const int64_t k = a.k, steps = a.kPadded / kStep;
  const int8_t *src = a.w + n * k;
  int64_t stride = k, inPlace = k / kStep;
  if (rows < kGroupRows) {
    // The last rows of the range: a zero-padded copy, so that the tiles'
    // 32 rows and whole steps read nothing past the weights.
    padded.assign(size_t(kGroupRows * a.kPadded), 0);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(padded.data() + r * a.kPadded, src + r * k, size_t(k));
    src = padded.data();
    stride = a.kPadded;
    inPlace = steps;
  }
  if (inPlace < steps) {
    // K's last codes, fewer than 64 per row: their 32 rows zero padded.
    const int64_t left = k - inPlace * kStep;
    std::memset(tail, 0, size_t(kGroupRows * kStep));
    for (int64_t r = 0; r < kGroupRows; ++r)
      std::memcpy(tail + r * kStep, src + r * k + inPlace * kStep,
                  size_t(left));
  }
  // The next group's codes (contiguous: rows n + 32 .. n + 63), spread
  // over the first pass's steps, into L2. Without it the tile loads wait
  // on each line: on the Intel Xeon, int8 [1408, 256] from L3 (16 copies),
  // 1 thread, 5 rows took 20.9 us against 19.1 with it (16.5 into L1,
  // which lost from memory: 267 against 215 us for [4096, 768]).
  const char *next = reinterpret_cast<const char *>(a.w + (n + kGroupRows) * k);
  const int64_t nextLines =
      std::max<int64_t>(0, std::min(kGroupRows, a.n - n - kGroupRows)) * k / 64;
  const int64_t perStep = (nextLines + steps - 1) / steps;
  for (int64_t m = 0; m < a.m; m += kInt8AmxPassRows) {
    const int64_t cols = std::min(kInt8AmxPassRows, a.m - m);
    const uint8_t *xPass =
        a.xAmx + (m / kInt8AmxPassRows) * steps * 2 * kBTileBytes;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t s = 0; s < inPlace; ++s) {
      if (m == 0)
        for (int64_t l = s * perStep;
             l < std::min(nextLines, (s + 1) * perStep); ++l)
          _mm_prefetch(next + l * 64, _MM_HINT_T1);
      products(src + s * kStep, stride, xPass + s * 2 * kBTileBytes);
    }
    if (inPlace < steps)
      products(tail, kStep, xPass + inPlace * 2 * kBTileBytes);
    alignas(64) int32_t c[4][16 * 16];
    TSTORE(0, c[0], 64);
    TSTORE(1, c[1], 64);
    TSTORE(2, c[2], 64);
    TSTORE(3, c[3], 64);
    for (int h = 0; h < 2 && 16 * h < rows; ++h)
      epilogue(a, c[2 * h], c[2 * h + 1], n + 16 * h,
               std::min<int64_t>(16, rows - 16 * h), m, cols);
  }
}

} // namespace

int64_t int8AmxXBytes(int64_t m, int64_t kPadded) {
  return (m + kInt8AmxPassRows - 1) / kInt8AmxPassRows * (kPadded / kStep) * 2 *
         kBTileBytes;
}

void packXInt8ForAmx(const int16_t *xq, int64_t m, int64_t kPadded,
                     uint8_t *dst) {
  const int64_t steps = kPadded / kStep;
  if (m % kInt8AmxPassRows)
    // The last pass's columns past m: zero, as the kernel multiplies them.
    std::memset(dst + m / kInt8AmxPassRows * steps * 2 * kBTileBytes, 0,
                size_t(steps * 2 * kBTileBytes));
  for (int64_t row = 0; row < m; ++row) {
    const int64_t pass = row / kInt8AmxPassRows, col = row % kInt8AmxPassRows;
    uint8_t *xPass = dst + pass * steps * 2 * kBTileBytes;
    for (int64_t s = 0; s < steps; ++s)
      packStep(xq + row * kPadded + s * kStep, col, xPass + s * 2 * kBTileBytes,
               xPass + s * 2 * kBTileBytes + kBTileBytes);
  }
}

FOLIO_AMX_INT8 void gemvInt8Amx(const GemvInt8Args &a, int64_t nBegin,
                                int64_t nEnd) {
  thread_local std::vector<int8_t> padded;
  alignas(64) int8_t tail[kGroupRows * kStep];
  // Every tile 16 rows of 64 bytes: a last pass of fewer rows of x
  // multiplies the zero columns packXInt8ForAmx left, and its epilogue
  // drops them.
  TileConfig cfg;
  _tile_loadconfig(&cfg);
  for (int64_t n = nBegin; n < nEnd; n += kGroupRows)
    group(a, n, std::min(kGroupRows, nEnd - n), padded, tail);
  _tile_release();
}

} // namespace folio::cpu::detail
