//===- WeightPack.cpp - Packing linear weights ----------------------------===//

#include "codegen/CPU/WeightPack.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace folio::cpu {

using namespace detail;

namespace {

/// The outlier columns of w[n, k]: those with a weight beyond
/// kOutlierRowMedianRatio x its row's median magnitude, the most extreme
/// k / kMaxOutlierFraction at most, in increasing order.
std::vector<int32_t> outlierColumns(const float *w, int64_t n, int64_t k) {
  int64_t cap = k / kMaxOutlierFraction;
  if (cap == 0)
    return {};
  std::vector<float> score(size_t(k), 0.0f);
  std::vector<float> mags(static_cast<size_t>(k));
  for (int64_t r = 0; r < n; ++r) {
    const float *row = w + r * k;
    for (int64_t c = 0; c < k; ++c)
      mags[size_t(c)] = std::fabs(row[c]);
    std::nth_element(mags.begin(), mags.begin() + k / 2, mags.end());
    float median = mags[size_t(k / 2)];
    if (median == 0.0f)
      continue;
    for (int64_t c = 0; c < k; ++c)
      score[size_t(c)] = std::max(score[size_t(c)], std::fabs(row[c]) / median);
  }
  std::vector<int32_t> cols;
  for (int64_t c = 0; c < k; ++c)
    if (score[size_t(c)] > kOutlierRowMedianRatio)
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

void packInt8(const float *w, int64_t n, int64_t k, WeightPacking &out) {
  out.outlierCols = outlierColumns(w, n, k);
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

} // namespace

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
  return v;
}

bool isPackableWeightType(DType storage) {
  return storage == DType::F32 || storage == DType::BF16 ||
         storage == DType::F16 || storage == DType::I8;
}

Status packWeightRows(const float *w, int64_t n, int64_t k, DType storage,
                      WeightPacking &out) {
  const char *kernel = "packWeightRows";
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "out features", n));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "in features", k));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "weights", w, n * k));
  if (!isPackableWeightType(storage))
    return Status::error(std::string("packWeightRows: weights are packed as "
                                     "f32, bf16, f16 or int8, not ") +
                         dtypeName(storage));
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
  default:
    packInt8(w, n, k, out);
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
                                     "bf16, f16 or int8, not ") +
                         dtypeName(v.storage));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "weight data", v.data, v.n * v.k));
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
  size_t bytes = size_t(v.n * v.k) * dtypeSize(v.storage);
  if (v.storage == DType::I8)
    bytes += size_t(v.n) * 4 + size_t(v.numOutliers) * 4 +
             size_t(v.n * v.numOutliers) * 2;
  return bytes;
}

float weightViewAt(const WeightView &v, int64_t r, int64_t c) {
  size_t i = size_t(r * v.k + c);
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
