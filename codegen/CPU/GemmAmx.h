//===- GemmAmx.h - Prefill GEMM on AMX tiles, quantized weights -*- C++ -*-===//
//
// int8 and fp8_e4m3 weights hold codes that bf16 represents exactly (an
// int8 code has at most 7 significant bits, an e4m3 code at most 4), so on
// AMX-BF16 a prefill multiplies the codes themselves, converted once per
// panel, with x rounded to bf16, accumulates in f32 and applies the row's
// scale at the end. x's rounding is the one bf16 weights' prefill makes in
// oneDNN; decode (M <= kConvertTileRows) keeps f32 x in the GEMV. int4's
// group-wise scales do not factor out of a row's sum, so its panel holds
// the dequantized weights, and both they and x go as bf16 hi + lo pairs
// through three tile products (hi.hi, lo(x).hi, hi.lo(w)): each within
// about 2^-15, where plain bf16 cost the zoo's ONNX Runtime parity
// (docs/cpu-kernels.md).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_GEMMAMX_H
#define FOLIO_CODEGEN_CPU_GEMMAMX_H

#include <cstdint>

namespace folio::cpu::detail {

/// What the weight bytes hold: int8 or fp8_e4m3 codes (exact in bf16,
/// one scale per row), int4 rows (WeightPack.h's blocks) whose group
/// values min + q * scale are split into bf16 hi + lo (no row scale), or
/// f16 weights [N, K], split the same way (an f16 value is exactly the sum
/// of its bf16 rounding and the bf16 of what that left out: 11
/// significant bits, and bf16's exponent range holds f16's).
enum class AmxCodes { Int8, Fp8E4M3, Int4, F16 };

/// Whether `codes` carry their weights as bf16 hi + lo pairs (then x too).
constexpr bool amxSplitCodes(AmxCodes codes) {
  return codes == AmxCodes::Int4 || codes == AmxCodes::F16;
}

/// y[m, n] = scales[n] * (bf16(x[m, :]) . codes[n, :]) + outliers + bias,
/// or for int4 x[m, :] . W[n, :] + bias carried in bf16 hi + lo pairs.
struct AmxGemmArgs {
  /// x rounded to bf16, [amxPaddedRows(m), amxPaddedK(k)], zero padded
  /// (packXForAmx).
  const uint16_t *xb = nullptr;
  /// int4 and f16 only: what bf16 x left out, x - xb rounded to bf16 (same
  /// layout), multiplied too, so x is carried to about 2^-16.
  const uint16_t *xbLo = nullptr;
  int64_t m = 0;
  int64_t k = 0;
  AmxCodes codes = AmxCodes::Int8;
  const void *w = nullptr;       ///< codes [N, K], one byte each; int4:
                                 ///< [N, int4RowBytes(K)]; f16: [N, K]
  const float *scales = nullptr; ///< [N], per code (not int4 or f16)
  /// int4 only: weights per group and the f16 (scale, min) pairs [N,
  /// int4Groups(K, groupSize), 2].
  int64_t groupSize = 0;
  const uint16_t *params = nullptr;
  /// int8 only: bf16 outlier columns [N, numOutliers] and x's values in
  /// them, f32 [M, numOutliers] (Gemv.h, GemvInt8Args).
  int64_t numOutliers = 0;
  const uint16_t *outliers = nullptr;
  const float *xOut = nullptr;
  const float *bias = nullptr; ///< [N] or null
  float *y = nullptr;          ///< [M, N]
  int64_t n = 0;
};

/// K padded to whole tile rows (32 bf16).
inline int64_t amxPaddedK(int64_t k) { return (k + 31) / 32 * 32; }
/// M padded to whole A tiles (16 rows).
inline int64_t amxPaddedRows(int64_t m) { return (m + 15) / 16 * 16; }

/// Writes x[m, k] as bf16 (round to nearest even) into
/// dst[amxPaddedRows(m), amxPaddedK(k)], zero padded, and, given dstLo, the
/// remainder x - bf16(x) rounded to bf16 into it. Needs AVX512-BF16.
void packXForAmx(const float *x, int64_t m, int64_t k, uint16_t *dst,
                 uint16_t *dstLo = nullptr);

/// Output columns (weight rows) [nBegin, nEnd) of the product. Needs
/// amxActive(); ranges that start on a multiple of 32 waste no tile work.
void gemmAmx(const AmxGemmArgs &a, int64_t nBegin, int64_t nEnd);

/// The same product for int8 and fp8 codes with AVX512-BF16 dot products
/// (vdpbf16ps) on the same panels, for CPUs without AMX: the same bf16 x,
/// the same f32 accumulation per pair of K. Needs bf16DotActive() (int4
/// and f16, whose hi + lo products would cost more than the f32 panel,
/// keep it).
void gemmBf16Dot(const AmxGemmArgs &a, int64_t nBegin, int64_t nEnd);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_GEMMAMX_H
