//===- WeightPack.h - Linear weights in the layout the kernels read -*- C++
//-*-===//
//
// The one place that turns a linear layer's weight into what the CPU kernels
// stream: rows W[n, :] of k elements (the [N, K] "out_in" layout, gate and
// up stacked along N), stored f32, bf16, f16 or int8. The compiler calls it to
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
// docs/cpu-kernels.md describes the scheme and why it was chosen.
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
/// At most k / kMaxOutlierFraction outlier columns (k >= that), the most
/// extreme first: the side matrix stays under 1/32 of the int8 bytes x 2.
constexpr int64_t kMaxOutlierFraction = 64;

/// Borrowed view of a packed weight (plan blob, or a WeightPacking).
struct WeightView {
  DType storage = DType::F32; ///< F32, BF16, F16 or I8
  int64_t n = 0, k = 0;
  const void *data = nullptr; ///< [n, k] of storage
  // I8 only.
  const float *scales = nullptr; ///< [n]
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
  WeightView view() const;
};

/// Whether `storage` is a dtype packWeightRows writes (f32, bf16, f16,
/// int8).
bool isPackableWeightType(DType storage);

/// Packs the f32 rows w[n, k] as `storage`: a copy (f32), round to nearest
/// even (bf16, f16), or int8 as described above. Non-finite weights are refused
/// (they would poison a whole row's scale).
Status packWeightRows(const float *w, int64_t n, int64_t k, DType storage,
                      WeightPacking &out);

/// Checks that a view is complete and consistent: dtype, pointers, outlier
/// columns increasing and below k. Errors say which part is wrong.
Status checkWeightView(const WeightView &v);

/// Bytes a GEMV over the view reads (weights, scales and outliers).
size_t weightViewBytes(const WeightView &v);

/// Element (r, c) of the weight the view stores, as f32 (the reference the
/// tests compare kernels with).
float weightViewAt(const WeightView &v, int64_t r, int64_t c);

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_WEIGHTPACK_H
