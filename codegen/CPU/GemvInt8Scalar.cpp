//===- GemvInt8Scalar.cpp - Portable int8-weight kernel -------------------===//

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"

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

void splitQuads(const float *x, int64_t m, int64_t k, float *dst) {
  const int64_t kq = quadSplitLength(k);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < kq; ++i) {
      int64_t block = i / kGemvQuadBlock * kGemvQuadBlock;
      int64_t lane = i % kGemvQuadBlock;
      int64_t from = block + 4 * (lane % 16) + lane / 16;
      dst[r * kq + i] = from < k ? x[r * k + from] : 0.0f;
    }
}

void gemvInt8Scalar(const GemvInt8Args &a, int64_t nBegin, int64_t nEnd) {
  for (int64_t n = nBegin; n < nEnd; ++n) {
    const int8_t *w = a.w + n * a.k;
    for (int64_t m = 0; m < a.m; ++m) {
      const float *x = a.x + m * a.k;
      // Eight partial sums give the loop independent chains.
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= a.k; i += 8)
        for (int j = 0; j < 8; ++j)
          acc[j] += x[i + j] * float(w[i + j]);
      float s = 0;
      for (; i < a.k; ++i)
        s += x[i] * float(w[i]);
      for (int j = 0; j < 8; ++j)
        s += acc[j];
      a.y[m * a.n + n] =
          s * a.scales[n] + outlierDot(a, n, m) + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

} // namespace folio::cpu::detail
