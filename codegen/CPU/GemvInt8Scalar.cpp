//===- GemvInt8Scalar.cpp - Portable int8-weight kernel -------------------===//
//
// The definition the vector levels match bit for bit: x in 16-bit fixed
// point per row (quantizeXInt16Scalar), integer products summed exactly in
// 64 bits, and int8GemvOutput's epilogue (Gemv.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"

#include <cfloat>
#include <cmath>

namespace folio::cpu::detail {

/// The row's outlier columns in bf16 times x's gathered outlier columns.
static float outlierDot(const GemvInt8Args &a, int64_t n, int64_t m) {
  float s = 0;
  const uint16_t *o = a.outliers + n * a.numOutliers;
  const float *xo = a.xOut + m * a.numOutliers;
  for (int64_t j = 0; j < a.numOutliers; ++j)
    s += xo[j] * bf16ToFloat(o[j]);
  return s;
}

void quantizeXInt16Scalar(const float *x, int64_t m, int64_t k, int16_t *dst,
                          int64_t kPadded, float *steps) {
  for (int64_t r = 0; r < m; ++r) {
    const float *row = x + r * k;
    int16_t *codes = dst + r * kPadded;
    float amax = 0;
    bool finite = true;
    for (int64_t c = 0; c < k; ++c) {
      float v = std::fabs(row[c]);
      finite = finite && v <= FLT_MAX;
      amax = v > amax ? v : amax;
    }
    for (int64_t c = finite ? k : 0; c < kPadded; ++c)
      codes[c] = 0;
    if (!finite) {
      steps[r] = NAN;
      continue;
    }
    amax = amax > kInt8XAbsMaxFloor ? amax : kInt8XAbsMaxFloor;
    const float inv = float(kInt8XCodeMax) / amax;
    steps[r] = amax / float(kInt8XCodeMax);
    // |row[c] * inv| <= 32767 (1 + 2^-23)^2 < 32767.5: no clamp needed.
    for (int64_t c = 0; c < k; ++c)
      codes[c] = int16_t(std::nearbyint(row[c] * inv));
  }
}

void gemvInt8Scalar(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  for (int64_t n = nBegin; n < nEnd; ++n) {
    const int8_t *w = a.w + n * a.k;
    for (int64_t m = 0; m < a.m; ++m) {
      const int16_t *xq = a.xq + m * a.kPadded;
      int64_t s = 0;
      for (int64_t c = 0; c < a.k; ++c)
        s += int32_t(w[c]) * int32_t(xq[c]);
      a.y[m * a.n + n] = int8GemvOutput(s, a.xSteps[m], a.scales[n],
                                        a.numOutliers ? outlierDot(a, n, m) : 0,
                                        a.bias ? a.bias[n] : 0.0f);
    }
  }
}

} // namespace folio::cpu::detail
