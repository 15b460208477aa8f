//===- GemvInt4Scalar.cpp - Portable int4-weight kernel -------------------===//

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Gemv.h"
#include "codegen/CPU/WeightPack.h"

#include <algorithm>

namespace folio::cpu::detail {

void gemvInt4Scalar(const GemvInt4Args &a, int64_t nBegin, int64_t nEnd) {
  const int64_t groups = int4Groups(a.k, a.groupSize);
  const int64_t rowBytes = int4RowBytes(a.k);
  for (int64_t n = nBegin; n < nEnd; ++n) {
    const uint8_t *w = a.w + n * rowBytes;
    const uint16_t *p = a.params + n * groups * 2;
    for (int64_t m = 0; m < a.m; ++m) {
      const float *x = a.x + m * a.k;
      float s = 0;
      for (int64_t g = 0; g < groups; ++g) {
        // sum x (min + q scale) = scale sum x q + min sum x.
        float xq = 0, xs = 0;
        const int64_t end = std::min(a.k, (g + 1) * a.groupSize);
        for (int64_t i = g * a.groupSize; i < end; ++i) {
          xq += x[i] * float(int4CodeAt(w, i));
          xs += x[i];
        }
        s += xq * f16ToFloat(p[2 * g]) + xs * f16ToFloat(p[2 * g + 1]);
      }
      a.y[m * a.n + n] = s + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

} // namespace folio::cpu::detail
