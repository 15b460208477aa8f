//===- WeightPack.cpp - Packing linear weights ----------------------------===//

#include "codegen/CPU/WeightPack.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace folio::cpu {

using namespace detail;

namespace {

/// The median of v, which is partially sorted in place.
float medianOf(std::vector<float> &v) {
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2),
                   v.end());
  return v[v.size() / 2];
}

/// The outlier columns of w[n, k], in increasing order: those with a weight
/// beyond kOutlierRowMedianRatio x its row's median magnitude and, given
/// the calibrated input abs-max per column, those whose input stands beyond
/// kOutlierInputMedianRatio x the median column's; the k /
/// kMaxOutlierFraction at most that stand farthest past their rule's
/// threshold (a column's score is the larger of its two ratios, each over
/// its threshold).
std::vector<int32_t> outlierColumns(const float *w, int64_t n, int64_t k,
                                    const float *inputAbsMax) {
  int64_t cap = k / kMaxOutlierFraction;
  if (cap == 0)
    return {};
  std::vector<float> score(size_t(k), 0.0f);
  std::vector<float> mags(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    const float *row = w + r * k;
    for (int64_t c = 0; c < k; ++c)
      mags[size_t(c)] = std::fabs(row[c]);
    float median = medianOf(mags);
    if (median == 0.0f)
      continue;
    for (int64_t c = 0; c < k; ++c)
      score[size_t(c)] = std::max(score[size_t(c)], std::fabs(row[c]) / median /
                                                        kOutlierRowMedianRatio);
  }
  if (inputAbsMax) {
    std::vector<float> inputs(inputAbsMax, inputAbsMax + k);
    float median = medianOf(inputs);
    if (median > 0.0f)
      for (int64_t c = 0; c < k; ++c)
        score[size_t(c)] =
            std::max(score[size_t(c)],
                     inputAbsMax[c] / median / kOutlierInputMedianRatio);
  }
  std::vector<int32_t> cols;
  for (int64_t c = 0; c < k; ++c)
    if (score[size_t(c)] > 1.0f)
      cols.push_back(int32_t(c));
  if (int64_t(cols.size()) > cap) {
    std::partial_sort(cols.begin(), cols.begin() + cap, cols.end(),
                      [&](int32_t a, int32_t b) {
                        return score[size_t(a)] > score[size_t(b)] ||
                               (score[size_t(a)] == score[size_t(b)] && a < b);
                      });
    cols.resize(size_t(cap));
  }
  std::sort(cols.begin(), cols.end());
  return cols;
}

void packInt8(const float *w, int64_t n, int64_t k, const float *inputAbsMax,
              WeightPacking &out) {
  out.outlierCols = outlierColumns(w, n, k, inputAbsMax);
  int64_t numOut = int64_t(out.outlierCols.size());
  std::vector<bool> isOutlier(size_t(k), false);
  for (int32_t c : out.outlierCols)
    isOutlier[size_t(c)] = true;
  out.data.assign(size_t(n * k), 0);
  out.scales.assign(size_t(n), 0.0f);
  out.outliers.assign(size_t(n * numOut), 0);
  auto *q = reinterpret_cast<int8_t *>(out.data.data());
  for (int64_t r = 0; r < n; ++r) {
    const float *row = w + r * k;
    float absMax = 0;
    for (int64_t c = 0; c < k; ++c)
      if (!isOutlier[size_t(c)])
        absMax = std::max(absMax, std::fabs(row[c]));
    // A zero row keeps scale 0 and zero codes: the kernels then add 0.
    float scale = absMax / 127.0f;
    out.scales[size_t(r)] = scale;
    float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (int64_t c = 0; c < k; ++c) {
      if (isOutlier[size_t(c)])
        continue;
      float v = std::nearbyint(row[c] * inv);
      q[r * k + c] = int8_t(std::clamp(v, -127.0f, 127.0f));
    }
    for (int64_t j = 0; j < numOut; ++j)
      out.outliers[size_t(r * numOut + j)] =
          floatToBf16(row[out.outlierCols[size_t(j)]]);
  }
}

/// Per row: scale = abs-max / 448 (e4m3's largest finite value), codes
/// rounded to nearest even; a zero row keeps scale 0 and zero codes.
void packFp8(const float *w, int64_t n, int64_t k, WeightPacking &out) {
  out.data.assign(size_t(n * k), 0);
  out.scales.assign(size_t(n), 0.0f);
  for (int64_t r = 0; r < n; ++r) {
    const float *row = w + r * k;
    float absMax = 0;
    for (int64_t c = 0; c < k; ++c)
      absMax = std::max(absMax, std::fabs(row[c]));
    float scale = absMax / 448.0f;
    out.scales[size_t(r)] = scale;
    if (scale == 0.0f)
      continue;
    float inv = 1.0f / scale;
    for (int64_t c = 0; c < k; ++c)
      out.data[size_t(r * k + c)] = floatToFp8E4M3(row[c] * inv);
  }
}

/// Min/max per group; the codes are rounded against the f16-rounded
/// params, so that dequantization (which reads those) is within half a
/// step of every weight.
Status packInt4(const float *w, int64_t n, int64_t k, int64_t g,
                WeightPacking &out) {
  int64_t groups = int4Groups(k, g), rowBytes = int4RowBytes(k);
  out.groupSize = g;
  out.data.assign(size_t(n * rowBytes), 0);
  out.groupParams.assign(size_t(n * groups * 2), 0);
  for (int64_t r = 0; r < n; ++r) {
    uint8_t *dst = out.data.data() + r * rowBytes;
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float *v = w + r * k + gi * g;
      const int64_t len = std::min(g, k - gi * g);
      float lo = v[0], hi = v[0];
      for (int64_t i = 1; i < len; ++i) {
        lo = std::min(lo, v[i]);
        hi = std::max(hi, v[i]);
      }
      uint16_t minH = floatToF16(lo);
      float minF = f16ToFloat(minH);
      uint16_t scaleH = floatToF16(std::max(hi - minF, 0.0f) / 15.0f);
      float scale = f16ToFloat(scaleH);
      if (!std::isfinite(minF) || !std::isfinite(scale))
        return Status::error(
            "packWeightRows: int4 group " + std::to_string(gi) + " of row " +
            std::to_string(r) + " spans [" + std::to_string(lo) + ", " +
            std::to_string(hi) +
            "], beyond the f16 range of its scale and min (+-65504)");
      out.groupParams[size_t((r * groups + gi) * 2)] = scaleH;
      out.groupParams[size_t((r * groups + gi) * 2 + 1)] = minH;
      float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
      for (int64_t i = 0; i < len; ++i) {
        float q = std::clamp(std::nearbyint((v[i] - minF) * inv), 0.0f, 15.0f);
        setInt4Code(dst, gi * g + i, unsigned(q));
      }
    }
  }
  return Status::success();
}

} // namespace

Status packInt4Codes(const uint8_t *codes, const uint16_t *groupParams,
                     int64_t n, int64_t k, int64_t groupSize,
                     WeightPacking &out) {
  if (n <= 0 || k <= 0)
    return Status::error("packInt4Codes: the weight is " + std::to_string(n) +
                         " x " + std::to_string(k) + "; both must be > 0");
  if (!isInt4GroupSize(groupSize))
    return Status::error("packInt4Codes: int4 group size " +
                         std::to_string(groupSize) +
                         " is not supported; groups are 32, 64 or 128");
  int64_t groups = int4Groups(k, groupSize), rowBytes = int4RowBytes(k);
  for (int64_t i = 0; i < n * groups * 2; ++i)
    if (!std::isfinite(f16ToFloat(groupParams[i])))
      return Status::error(
          "packInt4Codes: the " + std::string(i % 2 ? "min" : "scale") +
          " of group " + std::to_string(i / 2 % groups) + " of row " +
          std::to_string(i / 2 / groups) + " is not finite in f16");
  out = WeightPacking();
  out.storage = DType::I4;
  out.n = n;
  out.k = k;
  out.groupSize = groupSize;
  out.groupParams.assign(groupParams, groupParams + n * groups * 2);
  out.data.assign(size_t(n * rowBytes), 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      uint8_t q = codes[r * k + c];
      if (q > 15)
        return Status::error("packInt4Codes: code " + std::to_string(q) +
                             " of row " + std::to_string(r) + ", column " +
                             std::to_string(c) + " is not in [0, 15]");
      setInt4Code(out.data.data() + r * rowBytes, c, q);
    }
  return Status::success();
}

bool isInt4GroupSize(int64_t g) {
  for (int64_t s : kInt4GroupSizes)
    if (g == s)
      return true;
  return false;
}

WeightView WeightPacking::view() const {
  WeightView v;
  v.storage = storage;
  v.n = n;
  v.k = k;
  v.data = data.data();
  if (storage == DType::I8) {
    v.scales = scales.data();
    v.numOutliers = int64_t(outlierCols.size());
    v.outlierCols = outlierCols.data();
    v.outliers = outliers.data();
  }
  if (storage == DType::FP8E4M3)
    v.scales = scales.data();
  if (storage == DType::I4) {
    v.groupSize = groupSize;
    v.groupParams = groupParams.data();
  }
  return v;
}

bool isPackableWeightType(DType storage) {
  return storage == DType::F32 || storage == DType::BF16 ||
         storage == DType::F16 || storage == DType::I8 ||
         storage == DType::FP8E4M3 || storage == DType::I4;
}

Status packWeightRows(const float *w, int64_t n, int64_t k, DType storage,
                      WeightPacking &out, int64_t groupSize,
                      const float *inputAbsMax) {
  const char *kernel = "packWeightRows";
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "out features", n));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "in features", k));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "weights", w, n * k));
  if (!isPackableWeightType(storage))
    return Status::error(std::string("packWeightRows: weights are packed as "
                                     "f32, bf16, f16, int8, fp8_e4m3 or "
                                     "int4, not ") +
                         dtypeName(storage));
  if (storage != DType::I4 && groupSize != 0)
    return Status::error(std::string("packWeightRows: a group size applies "
                                     "to int4 weights only, not ") +
                         dtypeName(storage));
  if (storage == DType::I4) {
    if (groupSize == 0)
      groupSize = kDefaultInt4GroupSize;
    if (!isInt4GroupSize(groupSize))
      return Status::error("packWeightRows: int4 group size " +
                           std::to_string(groupSize) +
                           " is not supported; supported: 32, 64, 128");
  }
  if (inputAbsMax && storage != DType::I8)
    return Status::error(std::string("packWeightRows: input statistics choose "
                                     "int8 outlier columns; ") +
                         dtypeName(storage) + " weights have none");
  if (inputAbsMax)
    for (int64_t c = 0; c < k; ++c)
      if (!(inputAbsMax[c] >= 0.0f) || !std::isfinite(inputAbsMax[c]))
        return Status::error("packWeightRows: the input abs-max of column " +
                             std::to_string(c) + " is " +
                             std::to_string(inputAbsMax[c]) +
                             "; it must be finite and >= 0");
  for (int64_t i = 0; i < n * k; ++i)
    if (!std::isfinite(w[i]))
      return Status::error("packWeightRows: weight (" + std::to_string(i / k) +
                           ", " + std::to_string(i % k) +
                           ") is not finite; only finite weights can be "
                           "packed");
  out = WeightPacking();
  out.storage = storage;
  out.n = n;
  out.k = k;
  size_t count = size_t(n * k);
  switch (storage) {
  case DType::F32:
    out.data.resize(count * 4);
    std::memcpy(out.data.data(), w, count * 4);
    break;
  case DType::BF16: {
    out.data.resize(count * 2);
    auto *p = reinterpret_cast<uint16_t *>(out.data.data());
    for (size_t i = 0; i < count; ++i)
      p[i] = floatToBf16(w[i]);
    break;
  }
  case DType::F16: {
    out.data.resize(count * 2);
    auto *p = reinterpret_cast<uint16_t *>(out.data.data());
    for (size_t i = 0; i < count; ++i)
      p[i] = floatToF16(w[i]);
    break;
  }
  case DType::FP8E4M3:
    packFp8(w, n, k, out);
    break;
  case DType::I4:
    return packInt4(w, n, k, groupSize, out);
  default:
    packInt8(w, n, k, inputAbsMax, out);
    break;
  }
  return Status::success();
}

Status checkWeightView(const WeightView &v) {
  const char *kernel = "PackedWeight";
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "out features", v.n));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "in features", v.k));
  if (!isPackableWeightType(v.storage))
    return Status::error(std::string("PackedWeight: packed weights are f32, "
                                     "bf16, f16, int8, fp8_e4m3 or int4, "
                                     "not ") +
                         dtypeName(v.storage));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "weight data", v.data, v.n * v.k));
  if (v.storage != DType::I4 && (v.groupSize != 0 || v.groupParams))
    return Status::error(std::string("PackedWeight: ") + dtypeName(v.storage) +
                         " weights carry no group parameters");
  if (v.storage != DType::I4 && v.int8X)
    return Status::error(std::string("PackedWeight: int8 activations are for "
                                     "int4 weights, not ") +
                         dtypeName(v.storage));
  if (v.storage == DType::FP8E4M3) {
    if (v.numOutliers != 0)
      return Status::error("PackedWeight: fp8_e4m3 weights carry no outliers");
    FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "fp8 scales", v.scales, v.n));
    if (!v.scales)
      return Status::error("PackedWeight: fp8_e4m3 weights need their scales");
    return Status::success();
  }
  if (v.storage == DType::I4) {
    if (v.scales || v.numOutliers != 0)
      return Status::error(
          "PackedWeight: int4 weights carry group parameters, not per-row "
          "scales or outliers");
    if (!isInt4GroupSize(v.groupSize))
      return Status::error("PackedWeight: int4 group size " +
                           std::to_string(v.groupSize) +
                           " is not supported; groups are 32, 64 or 128 "
                           "weights");
    FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "int4 group parameters",
                                       v.groupParams,
                                       v.n * int4Groups(v.k, v.groupSize)));
    if (!v.groupParams)
      return Status::error(
          "PackedWeight: int4 weights need their group parameters");
    return Status::success();
  }
  if (v.storage != DType::I8) {
    if (v.scales || v.numOutliers != 0)
      return Status::error(std::string("PackedWeight: ") +
                           dtypeName(v.storage) +
                           " weights carry no scales or outliers");
    return Status::success();
  }
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "int8 scales", v.scales, v.n));
  if (!v.scales)
    return Status::error("PackedWeight: int8 weights need their scales");
  if (v.numOutliers < 0 || v.numOutliers > v.k)
    return Status::error("PackedWeight: " + std::to_string(v.numOutliers) +
                         " outlier columns; there may be 0 to " +
                         std::to_string(v.k) + " (the in features)");
  FOLIO_RETURN_IF_ERROR(
      checkPointer(kernel, "outlier columns", v.outlierCols, v.numOutliers));
  FOLIO_RETURN_IF_ERROR(
      checkPointer(kernel, "outlier weights", v.outliers, v.numOutliers));
  for (int64_t j = 0; j < v.numOutliers; ++j) {
    int32_t c = v.outlierCols[j];
    if (c < 0 || c >= v.k || (j > 0 && c <= v.outlierCols[j - 1]))
      return Status::error("PackedWeight: outlier column " + std::to_string(j) +
                           " is " + std::to_string(c) +
                           "; outlier columns are increasing and in [0, " +
                           std::to_string(v.k) + ")");
  }
  return Status::success();
}

size_t weightViewBytes(const WeightView &v) {
  if (v.storage == DType::I4)
    return size_t(v.n * int4RowBytes(v.k)) +
           (v.groupSize > 0 ? size_t(v.n * int4Groups(v.k, v.groupSize)) * 4
                            : 0);
  size_t bytes = size_t(v.n * v.k) * dtypeSize(v.storage);
  if (v.storage == DType::FP8E4M3)
    bytes += size_t(v.n) * 4;
  if (v.storage == DType::I8)
    bytes += size_t(v.n) * 4 + size_t(v.numOutliers) * 4 +
             size_t(v.n * v.numOutliers) * 2;
  return bytes;
}

float weightViewAt(const WeightView &v, int64_t r, int64_t c) {
  size_t i = size_t(r * v.k + c);
  if (v.storage == DType::FP8E4M3)
    return fp8E4M3ToFloat(static_cast<const uint8_t *>(v.data)[i]) *
           v.scales[r];
  if (v.storage == DType::I4) {
    const uint8_t *row =
        static_cast<const uint8_t *>(v.data) + r * int4RowBytes(v.k);
    const uint16_t *p =
        v.groupParams +
        (r * int4Groups(v.k, v.groupSize) + c / v.groupSize) * 2;
    return f16ToFloat(p[1]) + float(int4CodeAt(row, c)) * f16ToFloat(p[0]);
  }
  if (v.storage != DType::I8)
    return loadAsFloat(v.data, v.storage, i);
  const int32_t *end = v.outlierCols + v.numOutliers;
  const int32_t *at = std::lower_bound(v.outlierCols, end, int32_t(c));
  if (at != end && *at == c)
    return bf16ToFloat(
        v.outliers[size_t(r * v.numOutliers + (at - v.outlierCols))]);
  return float(static_cast<const int8_t *>(v.data)[i]) * v.scales[r];
}

} // namespace folio::cpu
