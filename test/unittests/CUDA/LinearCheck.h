//===- LinearCheck.h - Inputs and bounds for linear kernel tests -*- C++
//-*-===//
//
// Shared by the emulation and device tests of the CUDA linear kernel: the
// weights (with outlier columns and a zero row), the double-precision
// reference over the stored weights, and the error bounds.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_LINEARCHECK_H
#define FOLIO_TEST_UNITTESTS_CUDA_LINEARCHECK_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace folio::cuda::test {

/// W[n, k] with a few input columns far out of their rows, so that int8
/// takes them as outlier columns, and one row of zeros.
inline std::vector<float> randomWeights(int64_t n, int64_t k,
                                        std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(size_t(n * k));
  for (float &v : w)
    v = normal(rng);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c : {int64_t(3), k - 2})
      w[size_t(r * k + c)] *= 40.0f;
  for (int64_t c = 0; c < k; ++c)
    w[size_t(2 * k + c)] = 0.0f;
  return w;
}

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

/// The kernel's arguments for host buffers (the emulation).
inline folio_cuda::LinearArgs linearArgs(const cpu::WeightView &v,
                                         const float *x, int64_t m,
                                         const float *bias, float *y) {
  folio_cuda::LinearArgs a{};
  a.x = x;
  a.m = m;
  a.w = v.data;
  a.scales = v.scales;
  a.groupParams = v.groupParams;
  a.outlierCols = v.outlierCols;
  a.outliers = v.outliers;
  a.numOutliers = int(v.numOutliers);
  a.bias = bias;
  a.y = y;
  a.n = v.n;
  return a;
}

/// `got` (the kernel's [m, n]) within f32 accumulation error of the double
/// reference, and of the CPU GEMV's result on the same stored weights (the
/// device contracts multiply-adds into FMAs: the same bound holds).
inline void expectLinearMatches(const std::vector<float> &got,
                                const std::vector<float> &x, int64_t m,
                                const cpu::WeightView &v,
                                const std::vector<float> &bias) {
  cpu::PackedWeight pw;
  ASSERT_TRUE(
      cpu::PackedWeight::fromView(v, bias.empty() ? nullptr : bias.data(), pw)
          .ok());
  std::vector<float> cpuY(size_t(m * v.n));
  ASSERT_TRUE(cpu::linearGemv(x.data(), m, pw, cpuY.data()).ok());
  std::vector<double> want = reference(x, m, v, bias);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < v.n; ++r) {
      size_t at = size_t(i * v.n + r);
      double mag = magnitude(x, i, r, v, bias);
      double tol = 2e-6 * double(v.k) * mag + 1e-30;
      ASSERT_NEAR(got[at], want[at], tol) << "(" << i << "," << r << ")";
      ASSERT_NEAR(got[at], cpuY[at], 2 * tol + cpuRounding(v.storage, m) * mag)
          << "CPU kernel at (" << i << "," << r << ")";
    }
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_LINEARCHECK_H
