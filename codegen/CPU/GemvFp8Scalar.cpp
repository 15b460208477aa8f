//===- GemvFp8Scalar.cpp - Portable fp8_e4m3-weight kernel ----------------===//

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"

#include <array>

namespace folio::cpu::detail {

namespace {

/// Every code's value, from the bit-exact scalar conversion.
const std::array<float, 256> &codeTable() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c)
      t[size_t(c)] = fp8E4M3ToFloat(uint8_t(c));
    return t;
  }();
  return table;
}

} // namespace

void gemvFp8Scalar(const GemvFp8Args &a, int64_t nBegin, int64_t nEnd) {
  const float *table = codeTable().data();
  for (int64_t n = nBegin; n < nEnd; ++n) {
    const uint8_t *w = a.w + n * a.k;
    for (int64_t m = 0; m < a.m; ++m) {
      const float *x = a.x + m * a.k;
      // Eight partial sums give the loop independent chains.
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 8 <= a.k; i += 8)
        for (int j = 0; j < 8; ++j)
          acc[j] += x[i + j] * table[w[i + j]];
      float s = 0;
      for (; i < a.k; ++i)
        s += x[i] * table[w[i]];
      for (int j = 0; j < 8; ++j)
        s += acc[j];
      a.y[m * a.n + n] = s * a.scales[n] + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

} // namespace folio::cpu::detail
