//===- AttentionBench.cpp - Paged attention micro-benchmarks --------------===//
//
// Llama-110M shapes (12 query heads, 4 kv heads, head dim 64, f32 cache,
// block 16): a 512-token prefill, decode at context 528 for one and for
// eight sequences, and 4 speculative tokens each for eight sequences, on one
// and two threads. Each case runs on the AVX-512 path (also with split-K
// off), on the AMX bf16 tile where the host has one, and on the portable
// path; the machines are shared
// and noisy, so the binary repeats every case in random interleaved order and
// ends with the median ratio per case instead of trusting absolute times.
// Decode at context 4096 runs once per cache type (f32, bf16, fp8_e4m3,
// int8, int4 with groups of 32), cold and warm (the warm time is the
// kernel's arithmetic), on AVX-512, AVX2 and the portable path, and the
// summary gives each type's time relative to the f32 cache in the same run.
// The bundled target's shape (8 query heads, 4 kv heads, head dim 32, int8
// cache) runs decode and a k = 4 verify step at context 256, warm: what a
// speculative step's attention costs over a decode step's.
//
// "cold" decode flushes the cache pools from every cache level before each
// iteration: in a served model the next layer's K/V was last touched one
// token ago, with the whole model's weights streamed through since.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/PagedAttention.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <emmintrin.h>
#include <unistd.h>

using namespace folio::cpu;

namespace {

constexpr int64_t kBlock = 16;

/// Heads of one attention call.
struct Heads {
  int64_t heads, kvHeads, headDim;
};
/// Llama-110M's.
constexpr Heads k110M{12, 4, 64};
/// The bundled target's (models/bundled): a small head dim, a GQA group of 2.
constexpr Heads kBundled{8, 4, 32};

/// One attention call's inputs: `numSeqs` sequences of `context` tokens, the
/// last `queryLen` of each being queried, in a cache of type `dtype`.
/// Cache-line aligned, as the runtime allocates its pools.
struct AlignedFree {
  void operator()(uint8_t *p) const { std::free(p); }
};
using Pool = std::unique_ptr<uint8_t[], AlignedFree>;

Pool alignedPool(size_t bytes) {
  if (bytes == 0)
    return nullptr;
  return Pool(
      static_cast<uint8_t *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
}

struct Problem {
  Pool kPool, vPool, kParams, vParams;
  std::vector<float> kScale, vScale;
  std::vector<float> q, out;
  std::vector<int32_t> queryStartLoc, seqLens, blockTables;
  KVCacheView cache;
  RaggedBatch batch;
  AttentionParams params;
  double flops = 0, kvBytes = 0;

  Problem(int64_t numSeqs, int64_t context, int64_t queryLen,
          DType dtype = DType::F32, Heads shape = k110M) {
    const int64_t heads = shape.heads, kvHeads = shape.kvHeads,
                  headDim = shape.headDim;
    int64_t blocksPerSeq = (context + kBlock - 1) / kBlock;
    cache.numBlocks = numSeqs * blocksPerSeq;
    cache.blockSize = kBlock;
    cache.numKvHeads = kvHeads;
    cache.headDim = headDim;
    cache.dtype = dtype;
    cache.group = dtype == DType::I8 ? headDim : dtype == DType::I4 ? 32 : 0;
    kPool = alignedPool(cache.poolBytes());
    vPool = alignedPool(cache.poolBytes());
    kParams = alignedPool(cache.paramPoolBytes());
    vParams = alignedPool(cache.paramPoolBytes());
    cache.k = kPool.get();
    cache.v = vPool.get();
    cache.kParams = kParams.get();
    cache.vParams = vParams.get();
    if (isFp8(dtype)) {
      kScale.assign(size_t(kvHeads), 1.0f / 256.0f);
      vScale.assign(size_t(kvHeads), 1.0f / 256.0f);
      cache.kScale = kScale.data();
      cache.vScale = vScale.data();
    }
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    {
      int64_t slots = cache.numBlocks * kBlock, row = kvHeads * headDim;
      std::vector<float> k(size_t(slots * row)), v(k.size());
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = dist(rng);
        v[i] = dist(rng);
      }
      std::vector<int64_t> slotIds(static_cast<size_t>(slots));
      for (int64_t i = 0; i < slots; ++i)
        slotIds[size_t(i)] = i;
      Status st =
          kvWrite(cache, k.data(), row, v.data(), row, slotIds.data(), slots);
      if (!st) {
        std::fprintf(stderr, "kvWrite: %s\n", st.message().c_str());
        std::abort();
      }
    }
    // A pool that has served a while hands out blocks in no order.
    std::vector<int32_t> ids(size_t(cache.numBlocks));
    for (size_t i = 0; i < ids.size(); ++i)
      ids[i] = int32_t(i);
    std::shuffle(ids.begin(), ids.end(), rng);
    blockTables = ids;
    queryStartLoc = {0};
    for (int64_t s = 0; s < numSeqs; ++s) {
      seqLens.push_back(int32_t(context));
      queryStartLoc.push_back(int32_t((s + 1) * queryLen));
    }
    batch.numTokens = numSeqs * queryLen;
    batch.numSeqs = numSeqs;
    batch.queryStartLoc = queryStartLoc.data();
    batch.seqLens = seqLens.data();
    batch.blockTables = blockTables.data();
    batch.maxBlocksPerSeq = blocksPerSeq;
    params.numHeads = heads;
    params.scale = 1.0f / std::sqrt(float(headDim));
    q.resize(size_t(batch.numTokens * heads * headDim));
    for (float &x : q)
      x = dist(rng);
    out.resize(q.size());
    // Per query token at position p: (p + 1) keys, 2 flops each for q.k
    // and for p.V, per head and dimension.
    for (int64_t i = 0; i < queryLen; ++i)
      flops += 4.0 * heads * headDim * double(context - queryLen + i + 1);
    flops *= double(numSeqs);
    // The bytes a call reads: every token's K and V rows and params.
    kvBytes = double(numSeqs) * double(context) *
              double(kvBytesPerToken(dtype, kvHeads, headDim, cache.group));
  }

  /// Flushes on every thread of `threads`, so that its workers are awake
  /// when attention starts, as after the GEMV that precedes it in a model;
  /// a flush on the caller alone let the workers fall asleep and measured
  /// their wake-up.
  void flush(ThreadPool &threads) const {
    const uint8_t *pools[4] = {kPool.get(), vPool.get(), kParams.get(),
                               vParams.get()};
    const int64_t lines[4] = {int64_t(cache.poolBytes() / 64),
                              int64_t(cache.poolBytes() / 64),
                              int64_t(cache.paramPoolBytes() / 64),
                              int64_t(cache.paramPoolBytes() / 64)};
    for (int p = 0; p < 4; ++p) {
      if (lines[p] == 0)
        continue;
      threads.parallelFor(lines[p], 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          _mm_clflush(pools[p] + i * 64);
        _mm_mfence();
      });
    }
  }
};

/// A kernel choice: the dispatcher's own ("avx512"), one AVX-512
/// formulation forced for every tile, the AVX2 tier, or the portable path.
struct Variant {
  const char *name;
  Isa isa;
  int64_t transposedMinRows; ///< 0: the dispatcher's default
  bool splitK = true;
  detail::AmxMode amx = detail::AmxMode::Off;
};

const Variant kVariants[] = {
    {"avx512", Isa::Avx512, 0},
    {"amx", Isa::Avx512, 0, true, detail::AmxMode::Force},
    {"avx512-nosplit", Isa::Avx512, 0, false},
    {"avx512-rows", Isa::Avx512, INT64_MAX},
    {"avx512-lanes", Isa::Avx512, 1},
    {"avx2", Isa::Avx2, 0},
    {"scalar", Isa::Scalar, 0}};

void runCase(benchmark::State &state, Problem &p, const Variant &variant,
             bool cold, unsigned threads) {
  if (variant.isa == Isa::Avx512 && !hostFeatures().avx512) {
    state.SkipWithError("no AVX-512 on this host");
    return;
  }
  if (variant.isa == Isa::Avx2 && !hostFeatures().avx2) {
    state.SkipWithError("no AVX2 on this host");
    return;
  }
  detail::AmxMode savedAmx = detail::setAmxAttentionMode(variant.amx);
  if (variant.amx == detail::AmxMode::Force &&
      !detail::amxAttentionUsable(p.cache.headDim, true)) {
    detail::setAmxAttentionMode(savedAmx);
    state.SkipWithError("no usable AMX-BF16 on this host");
    return;
  }
  ThreadPool pool(threads);
  setIsaLimit(variant.isa);
  bool savedSplit = detail::setSplitKEnabled(variant.splitK);
  int64_t savedMinRows =
      variant.transposedMinRows
          ? detail::setTransposedMinRows(variant.transposedMinRows)
          : 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      p.flush(pool);
      state.ResumeTiming();
    }
    Status st = pagedAttention(p.q.data(), p.cache, p.batch, p.params,
                               p.out.data(), pool);
    if (!st) {
      state.SkipWithError(st.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(p.out.data());
    benchmark::ClobberMemory();
  }
  setIsaLimit(Isa::Avx512);
  detail::setSplitKEnabled(savedSplit);
  detail::setAmxAttentionMode(savedAmx);
  if (variant.transposedMinRows)
    detail::setTransposedMinRows(savedMinRows);
  state.counters["flops"] = benchmark::Counter(
      p.flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes"] = benchmark::Counter(
      p.kvBytes, benchmark::Counter::kIsIterationInvariantRate);
}

/// Collects each benchmark's median time and prints, after the normal
/// console output, every variant's speedup over the scalar path.
class RatioReporter : public benchmark::ConsoleReporter {
public:
  using ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      const std::string &name = r.run_name.function_name;
      bool median =
          r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (median || (r.run_type == Run::RT_Iteration && !medians.count(name)))
        times[name] = r.GetAdjustedRealTime();
      if (median)
        medians[name] = true;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    // Names "<case>/cache-<type>/t<threads>/<variant>": each type against
    // f32.
    std::printf("\ntime relative to the f32 cache (ratio of median times):\n");
    for (auto &[name, t] : times) {
      size_t at = name.find("/cache-");
      if (at == std::string::npos)
        continue;
      size_t end = name.find('/', at + 1);
      std::string ref = name.substr(0, at) + "/cache-f32" + name.substr(end);
      auto it = times.find(ref);
      if (it != times.end() && it->first != name && it->second > 0)
        std::printf("  %-50s %6.2f\n", name.c_str(), t / it->second);
    }
    std::printf("\nspeedup over scalar (ratio of median times):\n");
    for (auto &[name, t] : times) {
      auto slash = name.rfind('/');
      auto it = times.find(name.substr(0, slash) + "/scalar");
      if (it != times.end() && it->first != name && t > 0)
        std::printf("  %-40s %6.2fx\n", name.c_str(), it->second / t);
    }
    std::printf("\nspeedup of the default over each other variant:\n");
    for (auto &[name, t] : times) {
      auto slash = name.rfind('/');
      auto it = times.find(name.substr(0, slash) + "/avx512");
      if (it != times.end() && it->first != name && it->second > 0)
        std::printf("  %-40s %6.2fx\n", name.c_str(), t / it->second);
    }
  }

private:
  std::map<std::string, double> times;
  std::map<std::string, bool> medians;
};

void registerCase(const std::string &name, std::shared_ptr<Problem> p,
                  bool cold, bool allVariants = true) {
  for (unsigned threads : {1u, 2u})
    for (const Variant &variant : kVariants) {
      // Cache-type cases: the default AVX-512 path, AVX2 and the portable
      // one.
      if (!allVariants && variant.name != std::string("avx512") &&
          variant.name != std::string("avx2") &&
          variant.name != std::string("scalar"))
        continue;
      std::string full =
          name + "/t" + std::to_string(threads) + "/" + variant.name;
      benchmark::RegisterBenchmark(
          full.c_str(),
          [p, &variant, cold, threads](benchmark::State &s) {
            runCase(s, *p, variant, cold, threads);
          })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
}

} // namespace

int main(int argc, char **argv) {
  // Defaults first so that flags given on the command line win.
  std::vector<char *> args = {argv[0]};
  std::string defaults[] = {"--benchmark_repetitions=5",
                            "--benchmark_enable_random_interleaving=true",
                            "--benchmark_report_aggregates_only=true",
                            "--benchmark_min_time=0.2"};
  for (std::string &d : defaults)
    args.push_back(d.data());
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  int n = int(args.size());

  registerCase("prefill512", std::make_shared<Problem>(1, 512, 512), false);
  auto decode1 = std::make_shared<Problem>(1, 528, 1);
  registerCase("decode528x1/warm", decode1, false);
  registerCase("decode528x1/cold", decode1, true);
  registerCase("decode528x8/cold", std::make_shared<Problem>(8, 528, 1), true);
  // Speculative verification: 4 tokens x 3 heads = 12 rows per tile, where
  // the dispatcher switches to the transposed form.
  registerCase("verify4x528x8/cold", std::make_shared<Problem>(8, 528, 4),
               true);
  // The bundled target's decode and k = 4 verify steps (5 tokens x a group
  // of 2 = 10 rows per tile, the row form) on its int8 cache, warm: what a
  // speculative step costs over a decode step.
  for (int64_t queryLen : {1, 5})
    registerCase(
        "bundled256x" + std::to_string(queryLen) + "/warm/cache-i8",
        std::make_shared<Problem>(1, 256, queryLen, DType::I8, kBundled), false,
        /*allVariants=*/false);
  // Long-context decode per cache type (split-K: 4 kv heads, 4 ranges each).
  for (DType t :
       {DType::F32, DType::BF16, DType::FP8E4M3, DType::I8, DType::I4}) {
    auto p = std::make_shared<Problem>(1, 4096, 1, t);
    registerCase(std::string("decode4096x1/cold/cache-") + dtypeName(t), p,
                 true, /*allVariants=*/false);
    registerCase(std::string("decode4096x1/warm/cache-") + dtypeName(t), p,
                 false, /*allVariants=*/false);
  }

  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data()))
    return 1;
  RatioReporter reporter(isatty(1) ? benchmark::ConsoleReporter::OO_Defaults
                                   : benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
