//===- WeightPack.h - Linear weights in the layout the kernels read -*- C++
//-*-===//
//
// The one place that turns a linear layer's weight into what the CPU kernels
// stream: rows W[n, :] of k elements (the [N, K] "out_in" layout, gate and
// up stacked along N), stored f32, bf16, f16, int8, fp8_e4m3 or int4. The
// compiler calls it to
// store weights compiled into a plan; the executor only points a
// PackedWeight at the bytes (WeightView), so loading converts nothing.
//
// int8 is weight-only: activations stay f32. Each output row has one f32
// scale (its abs-max over 127, rounded to nearest). Input columns whose
// weights stand far out of their rows (LLM.int8's outlier features, seen
// from the weight side) would inflate every scale they touch, so up to
// kMaxOutlierFraction of the columns are taken out of the int8 matrix
// (zero there) and kept in bf16 as a dense [N, numOutliers] side matrix
// with their column indices; the kernels add x[:, cols] . outliers^T.
// Given calibration data, columns whose inputs stand far out of the other
// columns' (LLM.int8's outlier features, seen from the activations) join
// them.
// docs/cpu-kernels.md describes the scheme and why it was chosen.
//
// fp8_e4m3 is weight-only too: one f32 scale per output row (its abs-max
// over 448, e4m3's largest finite value) and the codes W / scale rounded to
// nearest even, [n, k] bytes.
//
// int4 is group-wise along K: each run of `groupSize` (32, 64 or 128)
// weights of a row has an f16 (scale, min) pair, min = the group's minimum
// and scale = (max - min) / 15, and code q in [0, 15] stands for
// min + q * scale (asymmetric: the min is the zero point). When k is not a
// multiple of the group size the row's last group is shorter (k mod
// groupSize weights), as ONNX Runtime's MatMulNBits has it. A row is a
// sequence of 64-byte blocks of 128 weights, the last zero padded: weight
// 16j + l of a block is nibble j (bits 4j..4j+3) of the block's
// little-endian 32-bit word l, so that one 64-byte load and a shift and a
// mask per j give 16 consecutive weights in the 16 lanes (Int4Layout below).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_WEIGHTPACK_H
#define FOLIO_CODEGEN_CPU_WEIGHTPACK_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"

#include <cstdint>
#include <vector>

namespace folio::cpu {

/// A column is an outlier when one of its weights is more than this many
/// times its row's median magnitude. The median, not the RMS or the mean,
/// because the outliers themselves would raise those; a Gaussian row of
/// 4096 peaks near 7x its median and a Laplacian one near 12x, while the
/// outlier features of trained LLM projections stand far beyond.
constexpr float kOutlierRowMedianRatio = 16.0f;
/// With calibration data, a column is also an outlier when the largest |x|
/// it was given is more than this many times the median column's: every
/// weight of that column is multiplied by it, so its rounding error counts
/// that many times more than a typical column's. LLM.int8 keeps features
/// beyond 6.0 in 16 bits, where typical features after a norm are near 1.
constexpr float kOutlierInputMedianRatio = 6.0f;
/// At most k / kMaxOutlierFraction outlier columns (k >= that), the most
/// extreme first: the side matrix stays under 1/32 of the int8 bytes x 2.
constexpr int64_t kMaxOutlierFraction = 64;

/// int4 weights per 64-byte block of a packed row.
constexpr int64_t kInt4Block = 128;
/// The int4 group sizes packWeightRows accepts, and its default.
constexpr int64_t kInt4GroupSizes[] = {32, 64, 128};
constexpr int64_t kDefaultInt4GroupSize = 128;

/// Bytes of one int4 row of k weights: whole 64-byte blocks.
inline int64_t int4RowBytes(int64_t k) {
  return (k + kInt4Block - 1) / kInt4Block * (kInt4Block / 2);
}

/// Groups of an int4 row of k weights (the last one may be short).
inline int64_t int4Groups(int64_t k, int64_t groupSize) {
  return (k + groupSize - 1) / groupSize;
}

/// Code of weight c of an int4 row (the layout above).
inline unsigned int4CodeAt(const uint8_t *row, int64_t c) {
  int64_t e = c % kInt4Block, j = e / 16, l = e % 16;
  uint8_t byte = row[c / kInt4Block * (kInt4Block / 2) + 4 * l + j / 2];
  return (byte >> (4 * (j % 2))) & 0xfu;
}

/// Sets code `q` (in [0, 15]) of weight c of a zeroed int4 row.
inline void setInt4Code(uint8_t *row, int64_t c, unsigned q) {
  int64_t e = c % kInt4Block, j = e / 16, l = e % 16;
  row[c / kInt4Block * (kInt4Block / 2) + 4 * l + j / 2] |=
      uint8_t((q & 0xfu) << (4 * (j % 2)));
}

/// Whether `g` is one of kInt4GroupSizes.
bool isInt4GroupSize(int64_t g);

/// Borrowed view of a packed weight (plan blob, or a WeightPacking).
struct WeightView {
  DType storage = DType::F32; ///< F32, BF16, F16, I8, FP8E4M3 or I4
  int64_t n = 0, k = 0;
  /// [n, k] of storage; I4: [n, int4RowBytes(k)] as described above.
  const void *data = nullptr;
  // I8 and FP8E4M3 (one scale per output row).
  const float *scales = nullptr; ///< [n]
  // I4 only: weights per group and the f16 (scale, min) pairs, [n,
  // int4Groups(k, groupSize), 2].
  int64_t groupSize = 0;
  const uint16_t *groupParams = nullptr;
  /// I4 only: the decode GEMV may round x to int8 per group and multiply
  /// the codes as integers (GemvInt4X8Avx512.cpp; the plan's
  /// StoredWeight::activations). False: x stays f32.
  bool int8X = false;
  // I8 only.
  int64_t numOutliers = 0;
  const int32_t *outlierCols = nullptr; ///< [numOutliers], increasing, < k
  const uint16_t *outliers = nullptr;   ///< bf16 [n, numOutliers]
};

/// A packed weight's bytes, owned.
struct WeightPacking {
  DType storage = DType::F32;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> data;
  std::vector<float> scales;
  std::vector<int32_t> outlierCols;
  std::vector<uint16_t> outliers;
  int64_t groupSize = 0;
  std::vector<uint16_t> groupParams;
  WeightView view() const;
};

/// Whether `storage` is a dtype packWeightRows writes (f32, bf16, f16,
/// int8, fp8_e4m3, int4).
bool isPackableWeightType(DType storage);

/// Packs the f32 rows w[n, k] as `storage`: a copy (f32), round to nearest
/// even (bf16, f16), or int8, fp8_e4m3 or int4 as described above.
/// `groupSize` is int4's (0: kDefaultInt4GroupSize) and must be 0 for the
/// other dtypes. `inputAbsMax` (int8 only; null: none) is the calibrated
/// largest |x| per input column, which adds the input rule to the outlier
/// columns (kOutlierInputMedianRatio). Non-finite weights are refused
/// (they would poison a whole row's or group's scale), and so are int4
/// groups whose scale or min overflow f16.
Status packWeightRows(const float *w, int64_t n, int64_t k, DType storage,
                      WeightPacking &out, int64_t groupSize = 0,
                      const float *inputAbsMax = nullptr);

/// Packs int4 weights that are quantized already (a model's own int4
/// weights, imported): codes[n, k] in [0, 15] standing for
/// min + code * scale with the f16 (scale, min) pairs groupParams[n,
/// int4Groups(k, groupSize), 2]. Nothing is rounded: the kernels read these
/// codes. Codes above 15 and non-finite params are refused.
Status packInt4Codes(const uint8_t *codes, const uint16_t *groupParams,
                     int64_t n, int64_t k, int64_t groupSize,
                     WeightPacking &out);

/// Checks that a view is complete and consistent: dtype, pointers, outlier
/// columns increasing and below k, int4's group size. Errors say which part
/// is wrong.
Status checkWeightView(const WeightView &v);

/// Bytes a GEMV over the view reads (weights, scales and outliers).
size_t weightViewBytes(const WeightView &v);

/// Element (r, c) of the weight the view stores, as f32 (the reference the
/// tests compare kernels with).
float weightViewAt(const WeightView &v, int64_t r, int64_t c);

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_WEIGHTPACK_H
