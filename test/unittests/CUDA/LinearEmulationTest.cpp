//===- LinearEmulationTest.cpp - Linear kernels vs the CPU ----------------===//
//
// The linear kernels of TestVariants.h, generated at build time and run
// through the emulation over weights packed by codegen/CPU/WeightPack.h
// (the bytes a plan stores): every weight type, int8 with outlier columns,
// int4 with every group size and short last blocks, with and without a
// bias, no rows, one row, a whole pass of rows and several passes. Each
// result is compared with a double-precision sum over the stored weights
// (the CPU linear tests' tolerance) and with the CPU kernel's.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

// Generated at build time: the kernels and kFolioTestLinear.
#include <LinearTestKernels.inc>

#include "codegen/CPU/Linear.h"
#include "codegen/CPU/WeightPack.h"
#include "test/unittests/CUDA/EmulationLaunch.h"
#include "test/unittests/CUDA/LinearCheck.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace folio::cuda::test {
namespace {

using cpu::DType;

const FolioTestLinear *findLinear(const std::string &key) {
  for (const FolioTestLinear &k : kFolioTestLinear)
    if (key == k.key)
      return &k;
  return nullptr;
}

TEST(CudaLinearEmulation, EveryWeightTypeMatchesTheCpu) {
  std::mt19937 rng(29);
  for (const LinearSpec &s : linearVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestLinear *kernel = findLinear(canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    // Not a multiple of the warps per block: the last block has idle warps.
    const int64_t n = 37, k = s.k;
    std::vector<float> wf = randomWeights(n, k, rng);
    cpu::WeightPacking packed;
    ASSERT_TRUE(
        cpu::packWeightRows(wf.data(), n, k, s.weightType, packed, s.groupSize)
            .ok());
    const cpu::WeightView v = packed.view();
    if (s.weightType == DType::I8) { // the forced columns became outliers
      EXPECT_GE(v.numOutliers, 1);
    }
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> bias(static_cast<size_t>(n));
    for (float &b : bias)
      b = normal(rng);

    for (int64_t m : {int64_t(0), int64_t(1), int64_t(s.rowsPerPass),
                      int64_t(2 * s.rowsPerPass + 1)}) {
      for (bool withBias : {false, true}) {
        SCOPED_TRACE("m=" + std::to_string(m) +
                     (withBias ? " with bias" : " no bias"));
        std::vector<float> noBias, &b = withBias ? bias : noBias;
        std::vector<float> x(size_t(m * k));
        for (float &e : x)
          e = normal(rng);
        if (m > 0)
          x[0] = 0.0f;

        // A sentinel beyond the last row: nothing may be written there.
        std::vector<float> got(size_t(m * n) + 1, -7.0f);
        folio_cuda::LinearArgs a = linearArgs(
            v, x.data(), m, withBias ? bias.data() : nullptr, got.data());
        cuda_emu::LaunchConfig config =
            emulationConfig(linearLaunch(s, n), name.c_str());
        config.scheduleSeed = rng();
        cuda_emu::launch(config, kernel->kernel, a);

        EXPECT_EQ(got.back(), -7.0f) << "wrote past the last row";
        got.pop_back();
        expectLinearMatches(got, x, m, v, b);
      }
    }
  }
}

TEST(CudaLinearEmulation, RowsDoNotDependOnTheirNeighbours) {
  // A row's result is the same alone and in a pass with others: a decode
  // row gives what it gives in a speculative verify batch.
  std::mt19937 rng(31);
  for (const LinearSpec &s : linearVariants()) {
    if (s.rowsPerPass < 2)
      continue;
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestLinear *kernel = findLinear(canonicalKey(s));
    ASSERT_NE(kernel, nullptr);
    const int64_t n = 9, k = s.k, m = s.rowsPerPass;
    std::vector<float> wf = randomWeights(n, k, rng);
    cpu::WeightPacking packed;
    ASSERT_TRUE(
        cpu::packWeightRows(wf.data(), n, k, s.weightType, packed, s.groupSize)
            .ok());
    const cpu::WeightView v = packed.view();
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(size_t(m * k));
    for (float &e : x)
      e = normal(rng);
    auto run = [&](const float *rows, int64_t count) {
      std::vector<float> y(size_t(count * n));
      folio_cuda::LinearArgs a = linearArgs(v, rows, count, nullptr, y.data());
      cuda_emu::launch(emulationConfig(linearLaunch(s, n), name.c_str()),
                       kernel->kernel, a);
      return y;
    };
    std::vector<float> all = run(x.data(), m);
    for (int64_t i = 0; i < m; ++i) {
      std::vector<float> one = run(x.data() + i * k, 1);
      for (int64_t r = 0; r < n; ++r)
        EXPECT_EQ(one[size_t(r)], all[size_t(i * n + r)])
            << "row " << i << ", output " << r;
    }
  }
}

} // namespace
} // namespace folio::cuda::test
