//===- LinearCheck.h - Inputs and bounds for linear kernel tests -*- C++
//-*-===//
//
// Shared by the emulation and device tests of the CUDA linear kernel: the
// weights (with outlier columns and a zero row), the kernel's arguments and
// the comparison with the reference and the CPU GEMV
// (tools/folio-gpu-bench/LinearReference.h has the reference and bounds).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_LINEARCHECK_H
#define FOLIO_TEST_UNITTESTS_CUDA_LINEARCHECK_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"
#include "codegen/CUDA/Templates/KernelArgs.cuh"
#include "tools/folio-gpu-bench/LinearReference.h"

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

using gpubench::cpuRounding;
using gpubench::magnitude;
using gpubench::reference;

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
