//===- KVWriteEmulationTest.cpp - Generated kv_write against the CPU ------===//
//
// Every kv_write variant of TestVariants.h, generated at build time and
// compiled here as host C++, runs through the emulation and must store
// exactly what the CPU kvWrite stores (NaN rows: NaN where the CPU has NaN,
// bit patterns aside).
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

// Generated at build time: the kernels and kFolioTestKVWrite, a table of
// FolioTestKVWrite {key, kernel}.
#include <KVWriteTestKernels.inc>

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"
#include "test/unittests/CUDA/EmulationLaunch.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace folio::cuda::test {
namespace {

using cpu::DType;

const FolioTestKVWrite *findKernel(const std::string &key) {
  for (const FolioTestKVWrite &k : kFolioTestKVWrite)
    if (key == k.key)
      return &k;
  return nullptr;
}

/// Both pools of one layer's cache, owned.
struct Cache {
  std::vector<unsigned char> k, v;
  std::vector<uint16_t> kParams, vParams;
  cpu::KVCacheView view;

  Cache(const KVWriteSpec &s, int64_t numBlocks, int64_t blockSize,
        const float *scales) {
    view.numBlocks = numBlocks;
    view.blockSize = blockSize;
    view.numKvHeads = s.numKvHeads;
    view.headDim = s.headDim;
    view.dtype = s.cacheType;
    view.group = s.group;
    k.assign(view.poolBytes(), 0x5a);
    v.assign(view.poolBytes(), 0x5a);
    kParams.assign(view.paramPoolBytes() / 2, 0x1234);
    vParams.assign(view.paramPoolBytes() / 2, 0x1234);
    view.k = k.data();
    view.v = v.data();
    view.kParams = kParams.empty() ? nullptr : kParams.data();
    view.vParams = vParams.empty() ? nullptr : vParams.data();
    if (cpu::isFp8(s.cacheType))
      view.kScale = view.vScale = scales;
  }
};

bool sameOrBothNaN(float a, float b) {
  return std::isnan(a) ? std::isnan(b) : cpu::floatBits(a) == cpu::floatBits(b);
}

TEST(CudaKVWriteEmulation, EveryVariantMatchesTheCpuKvWrite) {
  for (const KVWriteSpec &s : kvWriteVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestKVWrite *kernel = findKernel(canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;

    const int64_t numBlocks = 4, blockSize = 4, D = s.headDim;
    const int64_t H = s.numKvHeads, stride = H * D + 3;
    // Padding (-1), the first and the last slot, a block boundary.
    const std::vector<int64_t> slots = {5, -1, 0, 15, 8, 3, 12, 4};
    const int64_t T = int64_t(slots.size());
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> k(size_t(T * stride)), v(size_t(T * stride));
    for (float &x : k)
      x = normal(rng);
    for (float &x : v)
      x = normal(rng);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    float *constRow = &k[2 * stride], *edgeRow = &k[4 * stride];
    for (int64_t d = 0; d < D; ++d)
      constRow[d] = 0.75f; // a constant group: scale 0
    float edges[] = {7e4f, -1e6f,    1e-8f,   -0.0f,
                     0.0f, 65504.0f, -3e-41f, 500.0f};
    for (int64_t d = 0; d < 8; ++d)
      edgeRow[d] = edges[d];
    v[3 * stride + 5] = nan; // a NaN and an inf in other groups / heads
    v[6 * stride + D + 1] = inf;
    k[7 * stride + 2] = -inf;
    const float scales[] = {0.02f, 0.5f};

    Cache gpu(s, numBlocks, blockSize, scales),
        cpuCache(s, numBlocks, blockSize, scales);
    ASSERT_TRUE(cpu::kvWrite(cpuCache.view, k.data(), stride, v.data(), stride,
                             slots.data(), T)
                    .ok());
    folio_cuda::KVWriteArgs args{};
    args.k = k.data();
    args.v = v.data();
    args.kStride = args.vStride = stride;
    static_assert(sizeof(long long) == sizeof(int64_t));
    args.slotMapping = reinterpret_cast<const long long *>(slots.data());
    args.kCache = gpu.k.data();
    args.vCache = gpu.v.data();
    args.kParams = gpu.view.kParams ? gpu.kParams.data() : nullptr;
    args.vParams = gpu.view.vParams ? gpu.vParams.data() : nullptr;
    args.kScale = args.vScale = scales;
    cuda_emu::launch(emulationConfig(kvWriteLaunch(s, T), name.c_str()),
                     kernel->kernel, args);

    EXPECT_EQ(gpu.kParams, cpuCache.kParams);
    EXPECT_EQ(gpu.vParams, cpuCache.vParams);
    size_t rowBytes = gpu.view.headRowBytes();
    int64_t paramsPerRow = cpu::kvRowParams(s.cacheType, D, s.group);
    std::vector<float> a(static_cast<size_t>(D)), b(static_cast<size_t>(D));
    int mismatches = 0;
    for (int pool = 0; pool < 2; ++pool) {
      const auto &g = pool ? gpu.v : gpu.k, &c = pool ? cpuCache.v : cpuCache.k;
      const auto &gp = pool ? gpu.vParams : gpu.kParams,
                 &cp = pool ? cpuCache.vParams : cpuCache.kParams;
      for (int64_t row = 0; row < numBlocks * blockSize * H; ++row) {
        const unsigned char *gr = &g[size_t(row) * rowBytes];
        const unsigned char *cr = &c[size_t(row) * rowBytes];
        cpu::dequantizeKvRow(
            gr, paramsPerRow ? &gp[row * paramsPerRow] : nullptr, D,
            s.cacheType, s.group, scales[row % H], a.data());
        cpu::dequantizeKvRow(
            cr, paramsPerRow ? &cp[row * paramsPerRow] : nullptr, D,
            s.cacheType, s.group, scales[row % H], b.data());
        bool hasNaN = false;
        for (int64_t d = 0; d < D; ++d) {
          hasNaN |= std::isnan(b[d]);
          if (!sameOrBothNaN(a[d], b[d]) && ++mismatches <= 5)
            ADD_FAILURE() << (pool ? "V" : "K") << " row " << row << " element "
                          << d << ": emulated " << a[d] << ", CPU " << b[d];
        }
        if (!hasNaN && std::memcmp(gr, cr, rowBytes) != 0 && ++mismatches <= 5)
          ADD_FAILURE() << (pool ? "V" : "K") << " row " << row
                        << ": stored bytes differ";
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

} // namespace
} // namespace folio::cuda::test
