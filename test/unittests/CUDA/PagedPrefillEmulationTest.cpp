//===- PagedPrefillEmulationTest.cpp - Generated prefill attention vs CPU -===//
//
// Every paged prefill variant of TestVariants.h, generated at build time and
// compiled here as host C++, runs through the emulation (under a shuffled
// schedule) on ragged batches: whole prompts, prefill chunks after cached
// context mixed with decode tokens, an empty sequence and one-token
// sequences, block and tile boundaries, a long context, a sliding window
// with released blocks and a soft-cap, and an empty batch. It must match
// both the reference attention and the CPU kernel, which read the same
// cache (written by the CPU kvWrite).
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

// Generated at build time: the kernels and kFolioTestPagedPrefill.
#include <PagedPrefillTestKernels.inc>

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/Reference/Reference.h"
#include "test/unittests/CUDA/EmulationLaunch.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace folio::cuda::test {
namespace {

using cpu::DType;

/// The tensor-core kernels' error bound, relative to max |v|.
constexpr float kTensorCoreTol = 1e-2f;

struct Scenario {
  const char *what;
  std::vector<int32_t> seqLens, queries; // per sequence
  int64_t window = 0;
  float softCap = 0.0f;
};

std::vector<Scenario> scenarios(const PagedPrefillSpec &s) {
  int32_t bs = s.blockSize, qt = s.queryTile, kt = s.keyTile;
  return {
      {"whole prompts of ragged lengths",
       {37, 1, bs, bs + 1},
       {37, 1, bs, bs + 1}},
      {"prefill chunks after cached context, with decode tokens",
       {50, 9, 33, 2 * kt + 1},
       {13, 1, 1, qt + 1}},
      {"an empty sequence between one-token ones", {1, 5, 1}, {1, 0, 1}},
      {"block and tile boundaries",
       {bs, 2 * bs - 1, 2 * bs, kt, kt + 1},
       {bs, bs - 1, 1, std::min(qt, kt), std::min(qt, kt) + 1}},
      {"a long context", {5 * kt + 3 * bs + 7}, {2 * qt + 3}},
      {"sliding window with released blocks and a soft-cap",
       {70, 25, 3 * kt},
       {20, 25, 1},
       10,
       5.0f},
      {"an empty batch", {}, {}},
      {"sequences without query tokens", {4, 7}, {0, 0}},
  };
}

struct Cache {
  std::vector<unsigned char> k, v;
  std::vector<uint16_t> kParams, vParams;
  std::vector<float> scales = {0.03f, 0.4f};
  cpu::KVCacheView view;
};

void runScenario(const PagedPrefillSpec &s, const FolioTestPagedPrefill &kernel,
                 const Scenario &sc, std::mt19937 &rng) {
  SCOPED_TRACE(sc.what);
  const int64_t D = s.headDim, H = s.numKvHeads * s.queriesPerKv;
  const int64_t S = int64_t(sc.seqLens.size());
  std::normal_distribution<float> normal(0.0f, 1.0f);

  int64_t maxBlocks = 1, totalBlocks = 0, totalKeys = 0, maxQuery = 0;
  for (int64_t q = 0; q < S; ++q) {
    int64_t blocks = (sc.seqLens[q] + s.blockSize - 1) / s.blockSize;
    maxBlocks = std::max(maxBlocks, blocks);
    totalBlocks += blocks;
    totalKeys += sc.seqLens[q];
    maxQuery = std::max<int64_t>(maxQuery, sc.queries[q]);
  }
  Cache c;
  c.view.numBlocks = totalBlocks + 1; // block 0 stays unused
  c.view.blockSize = s.blockSize;
  c.view.numKvHeads = s.numKvHeads;
  c.view.headDim = D;
  c.view.dtype = s.cacheType;
  c.view.group = s.group;
  c.k.assign(c.view.poolBytes(), 0);
  c.v.assign(c.view.poolBytes(), 0);
  c.kParams.assign(c.view.paramPoolBytes() / 2, 0);
  c.vParams.assign(c.view.paramPoolBytes() / 2, 0);
  c.view.k = c.k.data();
  c.view.v = c.v.data();
  c.view.kParams = c.kParams.empty() ? nullptr : c.kParams.data();
  c.view.vParams = c.vParams.empty() ? nullptr : c.vParams.data();
  if (cpu::isFp8(s.cacheType))
    c.view.kScale = c.view.vScale = c.scales.data();

  std::vector<int32_t> ids(static_cast<size_t>(totalBlocks));
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> tables(size_t(std::max<int64_t>(S, 1) * maxBlocks), -1);
  std::vector<int64_t> slots;
  size_t next = 0;
  for (int64_t q = 0; q < S; ++q) {
    for (int64_t b = 0; b * s.blockSize < sc.seqLens[q]; ++b)
      tables[q * maxBlocks + b] = ids[next++];
    for (int32_t pos = 0; pos < sc.seqLens[q]; ++pos)
      slots.push_back(int64_t(tables[q * maxBlocks + pos / s.blockSize]) *
                          s.blockSize +
                      pos % s.blockSize);
  }
  std::vector<float> k(size_t(totalKeys * s.numKvHeads * D)), v(k.size());
  for (float &x : k)
    x = normal(rng);
  for (float &x : v)
    x = normal(rng);
  if (totalKeys > 0) {
    ASSERT_TRUE(cpu::kvWrite(c.view, k.data(), s.numKvHeads * D, v.data(),
                             s.numKvHeads * D, slots.data(), totalKeys)
                    .ok());
  }
  if (sc.window > 0) { // blocks wholly before every window are released
    for (int64_t q = 0; q < S; ++q) {
      int64_t firstKey = sc.seqLens[q] - sc.queries[q] - sc.window + 1;
      for (int64_t b = 0; (b + 1) * s.blockSize <= firstKey; ++b)
        tables[q * maxBlocks + b] = -1;
    }
  }

  std::vector<int32_t> starts(size_t(S + 1), 0);
  for (int64_t q = 0; q < S; ++q)
    starts[q + 1] = starts[q] + sc.queries[q];
  const int64_t T = starts[S];
  std::vector<float> query(size_t(T * H * D));
  for (float &x : query)
    x = normal(rng);

  cpu::RaggedBatch batch;
  batch.numTokens = T;
  batch.numSeqs = S;
  batch.queryStartLoc = starts.data();
  batch.seqLens = sc.seqLens.data();
  batch.blockTables = tables.data();
  batch.maxBlocksPerSeq = maxBlocks;
  cpu::AttentionParams params;
  params.numHeads = H;
  params.scale = 1.0f / std::sqrt(float(D));
  params.slidingWindow = sc.window;
  params.softCap = sc.softCap;
  std::vector<float> ref(query.size()), cpuOut(query.size());
  if (T > 0) {
    cpu::ref::pagedAttention(query.data(), c.view, batch, params, ref.data());
    ASSERT_TRUE(
        cpu::pagedAttention(query.data(), c.view, batch, params, cpuOut.data())
            .ok());
  }

  LaunchGeometry geometry = pagedPrefillLaunch(s, S, maxQuery);
  if (T == 0) { // nothing to launch: no block would have a query token
    EXPECT_EQ(uint64_t(geometry.grid[0]) * geometry.grid[1] * geometry.grid[2],
              0u);
    return;
  }
  std::vector<float> out(query.size(), std::nanf(""));
  folio_cuda::PagedPrefillArgs a{};
  a.q = query.data();
  a.kCache = c.k.data();
  a.vCache = c.v.data();
  a.kParams = c.view.kParams ? c.kParams.data() : nullptr;
  a.vParams = c.view.vParams ? c.vParams.data() : nullptr;
  a.kScale = a.vScale = c.scales.data();
  a.queryStartLoc = starts.data();
  a.seqLens = sc.seqLens.data();
  a.blockTables = tables.data();
  a.maxBlocksPerSeq = int(maxBlocks);
  a.scale = params.scale;
  a.slidingWindow = int(sc.window);
  a.softCap = sc.softCap;
  a.out = out.data();
  std::string name = kernelName(s);
  cuda_emu::LaunchConfig config = emulationConfig(geometry, name.c_str());
  config.scheduleSeed = rng();
  cuda_emu::launch(config, kernel.kernel, a);

  // Tensor cores: q, K, V and the probabilities in bf16; the error scales
  // with the values averaged.
  float maxV = 0.0f;
  for (float x : v)
    maxV = std::max(maxV, std::fabs(x));
  float worst = 0.0f;
  int bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    // f32 sums in another order, and an online softmax against a two-pass
    // one.
    float tol = s.tensorCores ? kTensorCoreTol * maxV
                              : 2e-5f + 2e-5f * std::fabs(ref[i]);
    worst = std::max(worst, std::fabs(out[i] - ref[i]) / maxV);
    if (!(std::fabs(out[i] - ref[i]) <= tol) ||
        !(std::fabs(out[i] - cpuOut[i]) <= tol)) {
      if (++bad <= 5) {
        ADD_FAILURE() << "element " << i << " (token " << i / (H * D)
                      << ", head " << i / D % H << ", d " << i % D
                      << "): emulated " << out[i] << ", reference " << ref[i]
                      << ", CPU kernel " << cpuOut[i];
      }
    }
  }
  EXPECT_EQ(bad, 0);
  if (s.tensorCores && std::getenv("FOLIO_TEST_VERBOSE"))
    std::printf("%s, %s: worst %.3g of max|v|\n", kernelName(s).c_str(),
                sc.what, worst);
}

TEST(CudaPagedPrefillEmulation, EveryVariantMatchesTheCpuKernels) {
  std::mt19937 rng(7);
  for (const PagedPrefillSpec &s : pagedPrefillVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestPagedPrefill *kernel = nullptr;
    for (const FolioTestPagedPrefill &k : kFolioTestPagedPrefill)
      if (canonicalKey(s) == k.key)
        kernel = &k;
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (const Scenario &sc : scenarios(s))
      runScenario(s, *kernel, sc, rng);
  }
}

} // namespace
} // namespace folio::cuda::test
