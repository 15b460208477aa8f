//===- GemvInt8Amx.cpp - int8 weights times int16 x codes on AMX-INT8 -----===//
//
// The int8 GEMV's product (GemvInt8Avx512.cpp: int8 weight codes times x
// in 16-bit fixed point, exact integer sums) on AMX-INT8 tiles, for the
// few rows of a verify step or a batched decode. Each x code splits
// exactly into code = 256 hi + lo, hi = code >> 8 (signed, -128..127) and
// lo = code & 255 (unsigned), so w . code = 256 (w . hi) + w . lo, two tile
// products (vpdpbssd-like signed x signed, and signed x unsigned) whose
// int32 sums are exact: each product is at most 128 x 255 in magnitude, so
// up to kInt8AmxMaxCodes codes never leave int32. The row's integer sum is
// then the GEMV's, and int8GemvOutput makes it the same float: every row
// is bitwise what the GEMV gives it alone, at any batch size.
//
// The weights are the A operand as they are stored (16 rows of 64 codes,
// one tile load with the row stride), so nothing is converted or packed
// per call; x is the B operand (packXInt8ForAmx, 16 rows of x per pass).
// The GEMV widens every weight and multiplies it once per row of x, so a
// verify step's 5 rows cost it about 4x one row where the weights are in
// cache; the tiles take all of x's rows in the same product (Gemv.h,
// kInt8AmxMaxRows, has the figures).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AmxTiles.h"
#include "codegen/CPU/Avx512Math.h"
#include "codegen/CPU/Gemv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#define FOLIO_AMX_INT8                                                         \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,"         \
                        "amx-tile,amx-int8")))

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

/// Weight rows [n, n + rows) (rows <= 32) times x rows [m, m + cols), with
/// the tile configuration for `cols` loaded. `padded` holds the rows
/// copied with zero padding (rows < 32); else the codes are read in place
/// and the last, partial step of K goes through `tail`.
FOLIO_AMX_INT8 void group(const GemvInt8Args &a, const uint8_t *xPass,
                          int64_t n, int64_t rows, int64_t m, int64_t cols,
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
  // The next group's codes (contiguous: rows n + 32 .. n + 63), spread
  // over this group's steps, into L2. Without it the tile loads wait on
  // each line: on the Intel Xeon, int8 [1408, 256] from L3 (16 copies), 1
  // thread, 5 rows took 20.9 us against 19.1 with it (16.5 into L1, which
  // lost from memory: 267 against 215 us for [4096, 768]).
  const char *next = reinterpret_cast<const char *>(a.w + (n + kGroupRows) * k);
  const int64_t nextLines =
      std::max<int64_t>(0, std::min(kGroupRows, a.n - n - kGroupRows)) * k / 64;
  const int64_t perStep = (nextLines + steps - 1) / steps;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t s = 0; s < inPlace; ++s) {
    for (int64_t l = s * perStep; l < std::min(nextLines, (s + 1) * perStep);
         ++l)
      _mm_prefetch(next + l * 64, _MM_HINT_T1);
    products(src + s * kStep, stride, xPass + s * 2 * kBTileBytes);
  }
  if (inPlace < steps) {
    // K's last codes, fewer than 64 per row: their 32 rows zero padded.
    const int64_t left = k - inPlace * kStep;
    std::memset(tail, 0, size_t(kGroupRows * kStep));
    for (int64_t r = 0; r < kGroupRows; ++r)
      std::memcpy(tail + r * kStep, src + r * k + inPlace * kStep,
                  size_t(left));
    products(tail, kStep, xPass + inPlace * 2 * kBTileBytes);
  }
  alignas(64) int32_t c[4][16 * 16];
  TSTORE(0, c[0], 64);
  TSTORE(1, c[1], 64);
  TSTORE(2, c[2], 64);
  TSTORE(3, c[3], 64);
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t *hi = c[(r / 16) * 2] + (r % 16) * 16;
    const int32_t *lo = c[(r / 16) * 2 + 1] + (r % 16) * 16;
    const int64_t row = n + r;
    const float scale = a.scales[row];
    const float bias = a.bias ? a.bias[row] : 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t sum = int64_t(hi[j]) * 256 + int64_t(lo[j]);
      const float outlier =
          a.numOutliers
              ? dotBf16(a.outliers + row * a.numOutliers,
                        a.xOut + (m + j) * a.numOutliers, a.numOutliers)
              : 0.0f;
      a.y[(m + j) * a.n + row] =
          int8GemvOutput(sum, a.xSteps[m + j], scale, outlier, bias);
    }
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
  const int64_t steps = a.kPadded / kStep;
  for (int64_t m = 0; m < a.m; m += kInt8AmxPassRows) {
    const int64_t cols = std::min(kInt8AmxPassRows, a.m - m);
    // C and B tiles as wide as the pass's rows of x: no column past them
    // is read or computed.
    TileConfig cfg;
    for (int t : {0, 1, 2, 3, 6, 7})
      cfg.colBytes[t] = uint16_t(4 * cols);
    _tile_loadconfig(&cfg);
    const uint8_t *xPass =
        a.xAmx + (m / kInt8AmxPassRows) * steps * 2 * kBTileBytes;
    for (int64_t n = nBegin; n < nEnd; n += kGroupRows)
      group(a, xPass, n, std::min(kGroupRows, nEnd - n), m, cols, padded, tail);
    _tile_release();
  }
}

} // namespace folio::cpu::detail
