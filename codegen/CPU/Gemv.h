//===- Gemv.h - Small-M matrix times W^T kernels ----------------*- C++ -*-===//
//
// Internal. y[m, n] = x[m, :] . w[n, :] + bias[n] for n in [nBegin, nEnd)
// and every m < M. Each output is computed independently of how N is split,
// so results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_GEMV_H
#define FOLIO_CODEGEN_CPU_GEMV_H

#include "codegen/CPU/WeightPack.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace folio::cpu::detail {

/// Elements per block of the pair-split x layout below.
constexpr int64_t kGemvPairBlock = 32;

struct GemvArgs {
  const float *x = nullptr; ///< [M, K]
  int64_t m = 0;
  int64_t k = 0;
  const void *w = nullptr; ///< [N, K], f32, bf16 or f16
  bool bf16 = false;
  bool f16 = false;
  const float *bias = nullptr; ///< [N] or null
  float *y = nullptr;          ///< [M, N]
  int64_t n = 0;
  /// For gemvAvx512 with bf16 weights: x in the pair-split layout that
  /// splitPairs() writes, [M, kPairs].
  const float *xPairs = nullptr;
  int64_t kPairs = 0;
};

/// The int8 kernels' arguments (WeightPack.h): y[m, n] = scales[n] *
/// (x[m, :] . q[n, :]) + xOut[m, :] . outliers[n, :] + bias[n].
///
/// The GEMV (gemvInt8*) and the int16 GEMMs (gemmInt8X16Avx512,
/// gemmInt8X16Avx2) read x in 16-bit fixed point per row (xq, from
/// quantizeXInt16*), so the products are integer and each row's sum is
/// exact: y[m, n] = int8GemvOutput(sum_k q[n, k] * xq[m, k], xSteps[m],
/// scales[n], ...) at every M.
struct GemvInt8Args {
  int64_t m = 0;
  int64_t k = 0;
  const int8_t *w = nullptr;     ///< [N, K]
  const float *scales = nullptr; ///< [N]
  int64_t numOutliers = 0;
  const uint16_t *outliers = nullptr; ///< bf16 [N, numOutliers]
  /// x's outlier columns, gathered once per call: [M, numOutliers].
  const float *xOut = nullptr;
  /// For the GEMV and GEMM: x's codes [M, kPadded] (zero in the outlier columns
  /// and the padding) and each row's step [M].
  const int16_t *xq = nullptr;
  int64_t kPadded = 0;
  const float *xSteps = nullptr;
  /// For gemvInt8Amx: xq as its B tiles (packXInt8ForAmx).
  const uint8_t *xAmx = nullptr;
  const float *bias = nullptr; ///< [N] or null
  float *y = nullptr;          ///< [M, N]
  int64_t n = 0;
};

/// The weight's part of the int8 kernels' arguments for `m` rows of x into
/// y: codes, scales, outlier columns, shape and bias. x's codes, steps and
/// outlier values are the caller's (linear(), and tests as it does).
inline GemvInt8Args int8WeightArgs(const WeightView &v, int64_t m,
                                   const float *bias, float *y) {
  GemvInt8Args a;
  a.m = m;
  a.k = v.k;
  a.w = static_cast<const int8_t *>(v.data);
  a.scales = v.scales;
  a.numOutliers = v.numOutliers;
  a.outliers = v.outliers;
  a.bias = bias;
  a.y = y;
  a.n = v.n;
  return a;
}

/// The largest |code| of x's 16-bit fixed point: a row's largest element
/// becomes +-32767, so every element is within step / 2 of code * step.
constexpr int kInt8XCodeMax = 32767;

/// Below this a row's largest |x| counts as this (2^-100): the step stays a
/// normal number and 32767 / max |x| finite, so a row of subnormals keeps
/// codes in range; such a row's elements are resolved to 2^-100 / 32767.
constexpr float kInt8XAbsMaxFloor = 0x1p-100f;

/// Row length of x's codes: K rounded up to 64 (one 512-bit load of
/// int16 per 32 codes, two per 64-byte line of weight codes).
inline int64_t int8XPaddedLength(int64_t k) { return (k + 63) / 64 * 64; }

/// Writes each row of x[M, K] as int16 codes dst[M, kPadded]:
/// round-half-even(x * (32767 / a)) with a = max(max |x| of the row,
/// kInt8XAbsMaxFloor), zero padded, and steps[m] = a / 32767. A row holding
/// a NaN or an infinity gets step NaN and zero codes, so its outputs are
/// NaN. The three levels write the same codes and steps (IEEE products,
/// rounding to nearest even); the caller zeroes x's outlier columns first so
/// that they do not set a row's step.
void quantizeXInt16Scalar(const float *x, int64_t m, int64_t k, int16_t *dst,
                          int64_t kPadded, float *steps);
void quantizeXInt16Avx2(const float *x, int64_t m, int64_t k, int16_t *dst,
                        int64_t kPadded, float *steps);
void quantizeXInt16Avx512(const float *x, int64_t m, int64_t k, int16_t *dst,
                          int64_t kPadded, float *steps);

/// `count` elements of the scratch `storage` (a kernel's per-thread panel),
/// their start aligned to `align` bytes for the panel's aligned loads.
template <typename T>
inline T *alignedScratch(std::vector<T> &storage, size_t count,
                         size_t align = 64) {
  storage.resize(count + align / sizeof(T));
  return reinterpret_cast<T *>(
      (reinterpret_cast<uintptr_t>(storage.data()) + align - 1) &
      ~uintptr_t(align - 1));
}

/// Calls tile(std::integral_constant<int, R>{}, m) over x rows [begin,
/// end): tiles of Rows rows while whole, then one of the rows left (the
/// GEMMs' row loop; each R is its own instantiation of the tile).
template <int Rows, typename Tile>
inline void forEachRowTile(int64_t begin, int64_t end, const Tile &tile) {
  int64_t m = begin;
  for (; m + Rows <= end; m += Rows)
    tile(std::integral_constant<int, Rows>{}, m);
  if constexpr (Rows > 1)
    if (m < end)
      forEachRowTile<Rows - 1>(m, end, tile);
}

/// The int8 GEMV's output from a row's exact integer sum: every level and
/// tile computes it in this order, so decode rows agree bit for bit across
/// them (outliers aside: their bf16 dot is each level's own).
inline float int8GemvOutput(int64_t sum, float step, float scale, float outlier,
                            float bias) {
  return float(sum) * step * scale + outlier + bias;
}

/// fp8_e4m3 weights (WeightPack.h): y[m, n] = scales[n] * (x[m, :] .
/// codes[n, :]) + bias[n].
struct GemvFp8Args {
  const float *x = nullptr; ///< [M, K]
  int64_t m = 0;
  int64_t k = 0;
  const uint8_t *w = nullptr;    ///< e4m3 codes [N, K]
  const float *scales = nullptr; ///< [N]
  const float *bias = nullptr;   ///< [N] or null
  float *y = nullptr;            ///< [M, N]
  int64_t n = 0;
};

/// int4 weights (WeightPack.h, groups of groupSize along K): y[m, n] =
/// x[m, :] . (min[n, g(k)] + q[n, k] * scale[n, g(k)]) + bias[n].
struct GemvInt4Args {
  const float *x = nullptr; ///< [M, K]
  int64_t m = 0;
  int64_t k = 0;
  const uint8_t *w = nullptr; ///< [N, int4RowBytes(K)]
  int64_t groupSize = 0;
  /// f16 (scale, min) [N, int4Groups(K, groupSize)]
  const uint16_t *params = nullptr;
  const float *bias = nullptr; ///< [N] or null
  float *y = nullptr;          ///< [M, N]
  int64_t n = 0;
  /// For gemvInt4X8Avx512: x as quantizeXForInt4 writes it (Int4X8Buffers),
  /// each array's rows the given number of elements apart.
  const int8_t *xq = nullptr;
  int64_t xqRow = 0;
  const float *xScales = nullptr;
  int64_t xScaleRow = 0;
  const float *xSums = nullptr;
  int64_t xSumRow = 0;
};

/// x for the int4 x int8 kernel, per row of x (GemvInt4X8Avx512.cpp says
/// why and in which order):
///  - xq: the int8 codes, 128 bytes per 128-weight block of the packed
///    rows (int4RowBytes(k) * 2 per row), zero past k;
///  - xScales: 16 floats per block, lane 4c + b the scale of the codes of
///    the block's 32-weight chunk b (every chunk of a group of 64 or 128
///    shares its group's scale);
///  - xSums: the exact sum of x over each weight group g at 2g + 1, zeros
///    between and after, padded to whole vectors of 8 groups.
/// Each row is quantized per weight group (at most 128 weights): codes
/// round(x * 127 / amax) to nearest even, scale amax / 127.
struct Int4X8Buffers {
  std::vector<int8_t> xq;
  std::vector<float> xScales, xSums;
  int64_t xqRow = 0, xScaleRow = 0, xSumRow = 0;
};

/// Fills `out` for x[M, K] and int4 groups of `groupSize`, with AVX-512
/// or AVX2 (the same bytes but for the float rounding of the sums).
void quantizeXForInt4Avx512(const float *x, int64_t m, int64_t k,
                            int64_t groupSize, Int4X8Buffers &out);
void quantizeXForInt4Avx2(const float *x, int64_t m, int64_t k,
                          int64_t groupSize, Int4X8Buffers &out);

/// K rounded up to kGemvPairBlock: the row length of the pair-split x.
inline int64_t pairSplitLength(int64_t k) {
  return (k + kGemvPairBlock - 1) / kGemvPairBlock * kGemvPairBlock;
}

/// Writes x[M, K] as dst[M, pairSplitLength(K)]: per block of 32 elements,
/// the 16 even-indexed ones then the 16 odd-indexed ones, zero padded. A
/// 64-byte load of 32 bf16 weights holds each even weight in the low and
/// each odd weight in the high half of a 32-bit lane, so `lane << 16` and
/// `lane & 0xffff0000` are the even and odd weights as exact f32, matching
/// this layout without any shuffle in the inner loop.
void splitPairs(const float *x, int64_t m, int64_t k, float *dst);

void gemvScalar(const GemvArgs &a, int64_t nBegin, int64_t nEnd);
void gemvAvx2(const GemvArgs &a, int64_t nBegin, int64_t nEnd);
/// The same product for many rows of x (f32, bf16 or f16 weights; no
/// pair-split x): 16 weight rows at a time widened into an f32 panel and
/// panelGemmAvx2 over it. linear() runs it above kSmallM rows on AVX2,
/// where oneDNN has no f16 matmul and no native bf16 one.
void gemmPanelAvx2(const GemvArgs &a, int64_t nBegin, int64_t nEnd);
void gemvAvx512(const GemvArgs &a, int64_t nBegin, int64_t nEnd);
/// Rows of x above which the vector levels' 8-bit and int4 kernels run a
/// GEMM over weight tiles converted once, instead of the GEMV (without
/// AMX, int8 and AVX-512's fp8 keep the GEMV longer:
/// kInt8GemvMaxRowsAvx512, kInt8GemvMaxRowsAvx2, kFp8GemvMaxRows).
constexpr int64_t kConvertTileRows = 8;

/// Rows of x up to which the int8 kernels run their GEMV rather than their
/// int16 GEMM (whose outputs are the GEMV's bits), where no bf16 GEMM takes
/// the rows above kConvertTileRows (no AMX, the vdpbf16ps GEMM off). One
/// 110M token's linears on an Intel Xeon with AMX ruled out, 1 thread
/// (folio-linear-bench verify, two runs, one per kernel), GEMV / GEMM, ms:
/// AVX-512 18.9 / 23.1 at M = 12, 24.0 / 26.6 at 16, 34.4 / 32.1 at 24,
/// 89.4 / 58.2 at 64; AVX2 (FOLIO_CPU_ISA=avx2) 37.4 / 43.9 at 16, 54.6 /
/// 55.4 at 24, 73.8 / 67.4 at 32, 141 / 116 at 64.
constexpr int64_t kInt8GemvMaxRowsAvx512 = 16;
constexpr int64_t kInt8GemvMaxRowsAvx2 = 24;

/// Rows of x up to which AVX-512's fp8 kernel runs its GEMV rather than the
/// f32 panel GEMM where no bf16 GEMM takes them, measured as above, GEMV /
/// panel: 37 / 45 ms at M = 12, 49 / 52 at 16, 73 / 63 at 24.
constexpr int64_t kFp8GemvMaxRows = 16;

/// Rows of x one pass of gemvInt8Amx takes (the B tiles' 16 columns).
constexpr int64_t kInt8AmxPassRows = 16;
/// The longest K (padded) gemvInt8Amx sums in its int32 tiles: 65,536
/// products of at most 128 x 255 stay below 2^31.
constexpr int64_t kInt8AmxMaxCodes = 65536;
/// From kInt8AmxMinRows rows of x on, linear() runs int8 weights through
/// gemvInt8Amx on AMX-INT8 hosts (rows of up to kInt8AmxMaxCodes codes).
/// Its rows are the GEMV's bits, so a verify step, a batched decode and a
/// prefill give every row what it gets decoded alone, as the int16 GEMM
/// does without AMX (the bf16 GEMM it replaces rounded x to bf16 above 8
/// rows). The kernel alone on the Intel Xeon (AMX), 1 thread, GEMV /
/// tiles, us: [1408, 256] in L2 8.9 / 8.5 at M = 1, 34.8 / 11.8 at 5,
/// 52.2 / 13.6 at 8, 106 / 22.7 at 16; from L3 (16 copies) 12.6 / 15.6 at
/// 1, 35.7 / 19.1 at 5; [4096, 768] from memory (32 copies) 227 / 213 at
/// 1, 246 / 215 at 5, 351 / 218 at 8. One 110M token's linears through
/// linear() (folio-linear-bench 3 2 verify, 2 threads, two runs each),
/// GEMV / tiles, ms: 2.7-3.0 / 3.8-4.5 at M = 3, 3.1-3.3 / 3.8-4.2 at 4,
/// 4.0-4.2 / 3.8-4.3 at 5, 5.3-6.1 / 4.3-4.8 at 8; bf16 GEMM / tiles
/// 8.0-8.7 / 4.1-4.4 at 12, 10.4-11.0 / 7.1-7.8 at 32, 15.7-17.2 /
/// 12.3-13.5 at 64; at 512 rows (folio-linear-bench 5 2 prefill, both in
/// one binary) within the runs' noise of each other on every 110M shape.
/// Up to 4 rows the GEMV's 4-row tile reads the weights once, as fast, so
/// the tiles start at 5.
constexpr int64_t kInt8AmxMinRows = 5;
/// Weights of fewer codes run gemvInt8Amx on the calling thread alone: at
/// 2 threads, splitting [256, 688] cost 12.4 us at 5 rows against 7.9 on
/// one thread, while [1376, 256] took 14.2 split against 20.0.
constexpr int64_t kInt8AmxSerialBytes = int64_t(256) << 10;

/// Bytes packXInt8ForAmx writes for m rows of x.
int64_t int8AmxXBytes(int64_t m, int64_t kPadded);
/// Writes x's codes xq [m, kPadded] as gemvInt8Amx's B tiles: per pass of
/// kInt8AmxPassRows rows of x, per 64 codes, a tile of the codes' high
/// bytes (code >> 8, signed) and one of their low bytes (code & 255), each
/// 16 rows of 4-code quads by 16 rows of x, the last pass's columns past
/// m zero. dst is 64-byte aligned.
void packXInt8ForAmx(const int16_t *xq, int64_t m, int64_t kPadded,
                     uint8_t *dst);
/// The GEMV's product on AMX-INT8 tiles (GemvInt8Amx.cpp), from a.xAmx:
/// every output bitwise gemvInt8Avx512's. Needs amxInt8Active() and
/// a.kPadded <= kInt8AmxMaxCodes.
void gemvInt8Amx(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);

void gemvInt8Scalar(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
void gemvInt8Avx2(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
/// With vpdpwssd where the host has AVX512-VNNI, else with vpmaddwd and
/// vpaddd (gemvInt8Avx512Madd): the same integer sums.
void gemvInt8Avx512(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
/// gemvInt8Avx512 without VNNI; exposed so that VNNI hosts test it too.
void gemvInt8Avx512Madd(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
/// The AVX-512 GEMM of int8 weights (M > kInt8GemvMaxRowsAvx512 where no
/// bf16 GEMM runs): the GEMV's x codes times the weight codes widened to
/// int16 on a panel of 32 rows, with vpdpwssd where the host has
/// AVX512-VNNI, else vpmaddwd and vpaddd (gemmInt8X16Avx512Madd). Its
/// outputs are the GEMV's bits; nBegin is a multiple of 32, as the panel's
/// rows.
void gemmInt8X16Avx512(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
/// gemmInt8X16Avx512 without VNNI; exposed so that VNNI hosts test it too.
void gemmInt8X16Avx512Madd(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
/// The same GEMM on AVX2 (vpmaddwd, panels of 16 rows; M >
/// kInt8GemvMaxRowsAvx2): the GEMV's bits; nBegin is a multiple of 16.
void gemmInt8X16Avx2(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd);
void gemvFp8Scalar(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd);
void gemvFp8Avx2(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd);
void gemvFp8Avx512(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd);
/// gemvFp8Avx512's two bodies (tests call each): codes widened through f16
/// (vcvtph2ps), and, on hosts with AVX512-VBMI, looked up as bf16 bytes
/// (vpermi2b); the dispatcher takes the second where the host has it.
void gemvFp8Avx512Cvt(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd);
void gemvFp8Avx512Vbmi(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd);
void gemvInt4Scalar(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);
void gemvInt4Avx2(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);
void gemvInt4Avx512(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);
/// Rows of x up to which int4 weights that allow int8 x run the int8-x
/// GEMV (decode, verify and batches) rather than the bf16 prefill GEMM,
/// where neither int8-x GEMM applies (AVX2; AMX hosts with groups of 32,
/// where the AMX bf16 GEMM beats the VNNI one): one 110M token's int4 linears
/// took 19.7 / 26.0 / 52.7 / 83.8 ms at M = 12 / 16 / 32 / 48 on the GEMV
/// against 50.8 / 51.2 / 57.7 / 64.4 on the AMX bf16 GEMM (Intel Xeon, 1
/// thread, folio-linear-bench verify). Where the AMX-INT8 GEMM applies
/// (groups of 128) it takes over above kConvertTileRows: 16.3 / 17.6 /
/// 20.8 / 28.0 ms at those M, against 13.4 ms for the GEMV and 15.9 for
/// the GEMM at M = 8. The VNNI GEMM, on AVX-512 hosts without AMX, takes
/// over above kConvertTileRows too (GemmInt4X8Avx512.cpp has figures).
constexpr int64_t kInt4X8MaxRows = 32;

/// int4 weights times the int8 x of quantizeXForInt4* for M <=
/// kInt4X8MaxRows (a.xq, xScales and xSums set): with AVX512-VNNI
/// (vpdpbusd), or with AVX2 (vpmaddubsw and vpmaddwd, the same integer
/// sums).
void gemvInt4X8Avx512(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);
void gemvInt4X8Avx2(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);
/// The same sums on AMX-INT8 tiles, for more rows (GemmAmxInt4X8.cpp):
/// groups of 64 or 128, x from quantizeXForInt4Avx512 then
/// prepareXForAmxInt4X8 (its codes zero padded to a multiple of 16 rows,
/// and for groups of 64 each block's dwords regrouped by group); needs
/// amxInt8Active().
void prepareXForAmxInt4X8(Int4X8Buffers &xq, int64_t m, int64_t groupSize);
void gemmAmxInt4X8(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);
/// The same sums with AVX512-VNNI over panels of 32 weight rows
/// (GemmInt4X8Avx512.cpp), for more rows where the AMX-INT8 GEMM does not
/// run: x from quantizeXForInt4Avx512 then prepareXForInt4X8Gemm (each
/// block's dwords regrouped by group for groups of 32 and 64); needs
/// AVX512-VNNI. Ranges that start on a multiple of 32 waste no work.
void prepareXForInt4X8Gemm(Int4X8Buffers &xq, int64_t m, int64_t groupSize);
void gemmInt4X8Avx512(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd);

/// Output rows of a prefill panel (two vectors).
constexpr int64_t kDequantPanelRows = 32;

/// f16 weights' prefill without AMX (a.f16; oneDNN 2.6 has no f16
/// matmul): 32 rows at a time widened into an f32 panel and
/// panelGemmAvx512 over all of x, as the fp8 and int4 panels.
void gemmF16PanelAvx512(const GemvArgs &a, int64_t nBegin, int64_t nEnd);

/// Rows of x up to which f16 weights stay in the GEMV tiles at the AVX-512
/// level: before the AMX GEMM (hi + lo bf16 products, GemmAmx.h), and
/// without AMX before gemmF16PanelAvx512. One 110M token's linears on an
/// Intel Xeon, 1 thread (folio-linear-bench verify), ms, GEMV against the
/// AMX GEMM against the panel: 45.6 / 63 / 63 at M = 16, 72.9 / about 62 /
/// (not run) at 24, 97.8 / 62 / 95 at 32, 187 / 78.5 / 137 at 64.
constexpr int64_t kF16GemvMaxRowsAmx = 16;
constexpr int64_t kF16GemvMaxRows = 32;

/// Writes numRows (<= kDequantPanelRows) rows of k floats, ld apart, as
/// the panel panelGemmAvx512 reads: panel[c * kDequantPanelRows + r] =
/// rows[r * ld + c], zero for r >= numRows. The dequantizing kernels
/// convert their rows as the GEMV does and transpose them with this.
void panelFromRowsAvx512(const float *rows, int64_t ld, int64_t numRows,
                         int64_t k, float *panel);

/// The prefill GEMM of the fp8 and int4 kernels (M > kConvertTileRows):
/// y[r, c] = x[r, :] . panel[:, c] + bias[c] for r < m, c < cols <= 32,
/// where panel is [k, kDequantPanelRows] f32 (dequantized weights, k-major, as
/// each kernel writes it once per call and panel) and y's rows are ldy
/// apart. bias is null or at the panel's first column, as y is.
void panelGemmAvx512(const float *x, int64_t m, int64_t k, const float *panel,
                     int64_t cols, const float *bias, float *y, int64_t ldy);

/// Output rows of an AVX2 prefill panel (two vectors of 8).
constexpr int64_t kPanelRowsAvx2 = 16;

/// The AVX2 kernels' prefill GEMM: y[r, c] = (x[r, :] . panel[:, c]) *
/// scales[c] + bias[c] for r < m, c < cols <= 16, panel [k, kPanelRowsAvx2]
/// f32, k-major. scales (null: 1) and bias (null: 0) start at the panel's
/// first column, as y does; y's rows are ldy apart.
void panelGemmAvx2(const float *x, int64_t m, int64_t k, const float *panel,
                   int64_t cols, const float *scales, const float *bias,
                   float *y, int64_t ldy);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_GEMV_H
