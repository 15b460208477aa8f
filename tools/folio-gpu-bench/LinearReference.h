//===- LinearReference.h - What a linear kernel is checked against -*- C++
//-*-===//
//
// The double-precision reference of y = x . W^T + bias over stored weights
// and the scale of its rounding error, shared by the GPU check and the
// CUDA linear tests.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TOOLS_FOLIO_GPU_BENCH_LINEARREFERENCE_H
#define FOLIO_TOOLS_FOLIO_GPU_BENCH_LINEARREFERENCE_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"

#include <cmath>
#include <vector>

namespace folio::gpubench {

/// y = x . W^T + bias in double over the stored weights.
inline std::vector<double> reference(const std::vector<float> &x, int64_t m,
                                     const cpu::WeightView &v,
                                     const std::vector<float> &bias) {
  std::vector<double> y(size_t(m * v.n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < v.n; ++r) {
      double s = bias.empty() ? 0.0 : bias[size_t(r)];
      for (int64_t c = 0; c < v.k; ++c)
        s += double(x[size_t(i * v.k + c)]) * cpu::weightViewAt(v, r, c);
      y[size_t(i * v.n + r)] = s;
    }
  return y;
}

/// sum |x w| (and for int4 its min and scale terms, which the CPU kernels
/// add per group): the scale of a dot product's rounding error.
inline double magnitude(const std::vector<float> &x, int64_t i, int64_t r,
                        const cpu::WeightView &v,
                        const std::vector<float> &bias) {
  double mag = bias.empty() ? 0.0 : std::fabs(bias[size_t(r)]);
  for (int64_t c = 0; c < v.k; ++c) {
    double xc = std::fabs(double(x[size_t(i * v.k + c)]));
    mag += xc * std::fabs(cpu::weightViewAt(v, r, c));
    if (v.storage == cpu::DType::I4) {
      const uint16_t *p =
          v.groupParams +
          (r * cpu::int4Groups(v.k, v.groupSize) + c / v.groupSize) * 2;
      mag += xc * (15 * std::fabs(cpu::f16ToFloat(p[0])) +
                   std::fabs(cpu::f16ToFloat(p[1])));
    }
  }
  return mag;
}

/// What the CPU kernel may differ by beyond f32 accumulation: above
/// kSmallM rows its 8-bit and int4 prefill paths round x to bf16
/// (QuantLinearTest's bound).
inline double cpuRounding(cpu::DType t, int64_t m) {
  if (m <= cpu::kSmallM || cpu::isPlainFloat(t))
    return 0.0;
  return t == cpu::DType::I4 ? 1.0 / 16384 : 1.0 / 256;
}

} // namespace folio::gpubench

#endif // FOLIO_TOOLS_FOLIO_GPU_BENCH_LINEARREFERENCE_H
