//===- ReferenceLinear.cpp - Naive linear ---------------------------------===//

#include "codegen/CPU/Reference/Reference.h"

namespace folio::cpu::ref {

void linear(const float *x, int64_t m, const void *w, DType wType,
            const float *bias, int64_t n, int64_t k, float *y) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bias ? bias[j] : 0.0;
      for (int64_t l = 0; l < k; ++l)
        s += double(x[i * k + l]) * loadAsFloat(w, wType, size_t(j * k + l));
      y[i * n + j] = float(s);
    }
}

} // namespace folio::cpu::ref
