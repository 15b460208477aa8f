//===- PagedDecodeEmulationTest.cpp - Generated decode attention vs CPU ---===//
//
// Every paged decode variant of TestVariants.h, generated at build time and
// compiled here as host C++, runs through the emulation on batches that hit
// one-token contexts, block boundaries, split-K over long contexts,
// several query tokens per sequence, a sliding window with released blocks
// and a soft-cap, and must match both the reference attention and the CPU
// kernel. The cache is written by the CPU kvWrite, so all three read the
// same quantized values.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

// Generated at build time: the kernels and kFolioTestPagedDecode, a table
// of FolioTestPagedDecode {key, main, combine}.
#include <PagedDecodeTestKernels.inc>

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/Reference/Reference.h"
#include "test/unittests/CUDA/EmulationLaunch.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace folio::cuda::test {
namespace {

using cpu::DType;

const FolioTestPagedDecode *findKernel(const std::string &key) {
  for (const FolioTestPagedDecode &k : kFolioTestPagedDecode)
    if (key == k.key)
      return &k;
  return nullptr;
}

struct Scenario {
  const char *what;
  std::vector<int32_t> seqLens, queries; // per sequence
  int64_t window = 0;
  float softCap = 0.0f;
  bool splitK = false; ///< the context needs several partitions
  /// K and V pools one byte off their alignment: the kernel's byte-wise
  /// loads instead of whole-chunk ones.
  bool misaligned = false;
};

std::vector<Scenario> scenarios(const PagedDecodeSpec &s) {
  int32_t bs = s.blockSize, p = s.partition;
  return {
      {"one-token contexts and block boundaries",
       {1, bs, bs + 1, 2 * bs - 1},
       {1, 1, 1, 1}},
      {"split-K over a long context",
       {3 * p + 5, 7, p},
       {1, 1, 1},
       0,
       0.0f,
       true},
      {"several query tokens, an empty sequence", {40, 5, 9}, {3, 0, 1}},
      {"sliding window and soft-cap, split-K",
       {2 * p + 3, 12},
       {2, 1},
       10,
       5.0f,
       true},
      {"pools not aligned to a chunk", {2 * p + 3, bs + 1}, {1, 1}, 0, 0.0f,
       true, true},
  };
}

/// Cache of one layer, owned, filled by the CPU kvWrite.
struct Cache {
  std::vector<unsigned char> k, v;
  std::vector<uint16_t> kParams, vParams;
  std::vector<float> scales = {0.03f, 0.4f};
  cpu::KVCacheView view;
};

void runScenario(const PagedDecodeSpec &s, const FolioTestPagedDecode &kernel,
                 const Scenario &sc, std::mt19937 &rng) {
  SCOPED_TRACE(sc.what);
  const int64_t D = s.headDim, H = s.numKvHeads * s.queriesPerKv;
  const int64_t S = int64_t(sc.seqLens.size());
  std::normal_distribution<float> normal(0.0f, 1.0f);

  // Blocks in a random order; block 0 stays unused, as in the runtime.
  int64_t maxBlocks = 0, totalBlocks = 0, totalKeys = 0;
  for (int32_t len : sc.seqLens) {
    maxBlocks =
        std::max<int64_t>(maxBlocks, (len + s.blockSize - 1) / s.blockSize);
    totalBlocks += (len + s.blockSize - 1) / s.blockSize;
    totalKeys += len;
  }
  Cache c;
  c.view.numBlocks = totalBlocks + 1;
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
  std::vector<int32_t> tables(size_t(S * maxBlocks), -1);
  std::vector<int64_t> slots;
  size_t next = 0;
  for (int64_t q = 0; q < S; ++q) {
    int32_t len = sc.seqLens[q];
    for (int64_t b = 0; b * s.blockSize < len; ++b)
      tables[q * maxBlocks + b] = ids[next++];
    for (int32_t pos = 0; pos < len; ++pos)
      slots.push_back(int64_t(tables[q * maxBlocks + pos / s.blockSize]) *
                          s.blockSize +
                      pos % s.blockSize);
  }
  std::vector<float> k(size_t(totalKeys * s.numKvHeads * D)), v(k.size());
  for (float &x : k)
    x = normal(rng);
  for (float &x : v)
    x = normal(rng);
  ASSERT_TRUE(cpu::kvWrite(c.view, k.data(), s.numKvHeads * D, v.data(),
                           s.numKvHeads * D, slots.data(), totalKeys)
                  .ok());
  if (sc.window > 0) { // blocks wholly before every window may be released
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
  cpu::ref::pagedAttention(query.data(), c.view, batch, params, ref.data());
  ASSERT_TRUE(
      cpu::pagedAttention(query.data(), c.view, batch, params, cpuOut.data())
          .ok());

  int64_t maxContext = *std::max_element(sc.seqLens.begin(), sc.seqLens.end());
  PagedDecodeLaunch launch = pagedDecodeLaunch(s, T, maxContext);
  if (sc.splitK) {
    EXPECT_GT(launch.numPartitions, 2);
  }
  std::vector<float> out(query.size(), std::nanf("")),
      partial(launch.partialFloats, std::nanf("")), maxes(launch.statFloats),
      sums(launch.statFloats);
  folio_cuda::PagedDecodeArgs a{};
  a.q = query.data();
  a.kCache = c.k.data();
  a.vCache = c.v.data();
  std::vector<unsigned char> kOff, vOff;
  if (sc.misaligned) {
    kOff.assign(c.k.size() + 1, 0);
    vOff.assign(c.v.size() + 1, 0);
    std::copy(c.k.begin(), c.k.end(), kOff.begin() + 1);
    std::copy(c.v.begin(), c.v.end(), vOff.begin() + 1);
    a.kCache = kOff.data() + 1;
    a.vCache = vOff.data() + 1;
  }
  a.kParams = c.view.kParams ? c.kParams.data() : nullptr;
  a.vParams = c.view.vParams ? c.vParams.data() : nullptr;
  a.kScale = a.vScale = c.scales.data();
  a.queryStartLoc = starts.data();
  a.seqLens = sc.seqLens.data();
  a.blockTables = tables.data();
  a.maxBlocksPerSeq = int(maxBlocks);
  a.numSeqs = int(S);
  a.scale = params.scale;
  a.slidingWindow = int(sc.window);
  a.softCap = sc.softCap;
  a.numPartitions = launch.numPartitions;
  a.out = out.data();
  a.partialOut = partial.data();
  a.partialMax = maxes.data();
  a.partialSum = sums.data();
  if (T == 0)
    return;
  std::string name = kernelName(s), combine = combineKernelName(s);
  // A shuffled schedule, so that a missing barrier would change results.
  cuda_emu::LaunchConfig mainConfig =
      emulationConfig(launch.main, name.c_str());
  mainConfig.scheduleSeed = rng();
  cuda_emu::launch(mainConfig, kernel.main, a);
  if (launch.numPartitions > 1)
    cuda_emu::launch(emulationConfig(launch.combine, combine.c_str()),
                     kernel.combine, a);

  int bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    // f32 sums in another order, and libm's expf against double exp.
    float tol = 2e-5f + 2e-5f * std::fabs(ref[i]);
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
}

TEST(CudaPagedDecodeEmulation, EveryVariantMatchesTheCpuKernels) {
  std::mt19937 rng(99);
  for (const PagedDecodeSpec &s : pagedDecodeVariants()) {
    std::string name = kernelName(s);
    SCOPED_TRACE(name);
    const FolioTestPagedDecode *kernel = findKernel(canonicalKey(s));
    ASSERT_NE(kernel, nullptr) << "no generated kernel for " << name;
    for (const Scenario &sc : scenarios(s))
      runScenario(s, *kernel, sc, rng);
  }
}

} // namespace
} // namespace folio::cuda::test
