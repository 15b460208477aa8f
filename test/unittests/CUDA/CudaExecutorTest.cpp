//===- CudaExecutorTest.cpp - Whole forwards on the CUDA executor ---------===//
//
// The bundled model compiled for a GPU (its kernels embedded as folioc
// embeds them) runs through the CUDA executor on the fake driver, every
// launch in host emulation, and its logits match the CPU executor's on the
// same plan: prefills of several sequences crossing KV blocks, decode
// steps, a mixed batch, and decodes long enough to split the context, for
// each cache dtype and weight dtype the models' kernel table holds. Errors:
// plans without device kernels or with kernels no generator covers, a
// forward before the cache exists, token ids outside the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

#include "test/unittests/CUDA/ModelKernelRegistry.h"
#include "test/unittests/CUDA/ModelKernels.h"

#include "codegen/CPU/Gather.h"
#include "runtime/Core/SpeculativeStep.h"
#include "runtime/Device/CudaExecutor.h"
#include "runtime/Executor/StoredWeightView.h"
#include "runtime/Sampler/Sampler.h"
#include "runtime/SpecDecode/DraftProposer.h"
#include "tools/common/SpeculativeFlags.h"
#include "tools/folio-gpu-bench/Model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <dlfcn.h>
#include <fstream>
#include <map>
#include <numeric>
#include <thread>

namespace folio::cuda::test {
namespace {

/// The plan of `model` for `target` with `weights` and `cache`, its CUDA
/// kernels embedded (or not).
std::shared_ptr<plan::Plan> gpuPlan(const std::string &model,
                                    const std::string &target,
                                    const std::string &weights,
                                    const std::string &cache = "auto",
                                    bool embed = true) {
  mlir::folio::CompileToPlanOptions options;
  options.target = target;
  options.weightDtype = weights;
  options.kvCacheDtype = cache;
  auto compiled = mlir::folio::compileONNXToPlan(model, options);
  EXPECT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  if (!compiled)
    return nullptr;
  auto p = std::make_shared<plan::Plan>(std::move(*compiled));
  if (embed && target != "cpu") {
    std::vector<compiler::EmbeddedCudaKernel> embedded;
    std::vector<std::string> notGenerated;
    cuda::KernelCacheOptions noCache;
    noCache.enabled = false;
    Status s =
        compiler::embedCudaKernels(*p, target, noCache, embedded, notGenerated);
    EXPECT_TRUE(bool(s)) << s.message();
  }
  return p;
}

/// The bundled model's plan (see gpuPlan).
std::shared_ptr<plan::Plan> bundledPlan(const std::string &target,
                                        const std::string &weights,
                                        const std::string &cache = "auto",
                                        bool embed = true) {
  return gpuPlan(modelPaths(FOLIO_SOURCE_DIR).front(), target, weights, cache,
                 embed);
}

/// `s` is an error whose message holds `fragment`.
void expectRefused(const Status &s, const std::string &fragment) {
  ASSERT_FALSE(bool(s)) << "expected an error naming: " << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

std::unique_ptr<exec::Executor>
cudaExecutor(const exec::ExecutorOptions &options = {}) {
  // Blocks on every core: no kernel of these plans uses float atomics, so
  // the results do not depend on the order blocks run in.
  std::string workers =
      std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  ::setenv("FOLIO_FAKE_CUDA_WORKERS", workers.c_str(), 1);
  static std::map<std::string, const ModelKernelEntry *> generated;
  std::string error;
  if (generated.empty() && !registerModelKernels(generated, error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  Expected<std::unique_ptr<device::CudaDevice>> dev =
      device::CudaDevice::open();
  if (!dev) {
    ADD_FAILURE() << dev.status().message();
    return nullptr;
  }
  return device::createCudaExecutor(std::move(*dev), options);
}

using Sequences = gpubench::SequenceBatches;

/// Token ids in [3, 3 + spread): the bundled vocabulary's 4,096 by
/// default.
std::vector<int32_t> tokens(int n, int32_t seed, int32_t spread = 4000) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    t[size_t(i)] = int32_t((seed * 131 + i * 977) % spread + 3);
  return t;
}

/// How closely the CUDA executor's logits must follow the CPU's.
struct Tolerance {
  /// Largest |gpu - cpu| / (1 + |cpu|) over every logit.
  double logits;
  /// Rows whose CPU top token leads the next by more than this (relative
  /// to 1 + |top|) must have the same greedy token.
  double margin;
};

/// f32 weights and cache: the same arithmetic in another order (measured:
/// 1e-6).
constexpr Tolerance kExact = {1e-4, 0.0};
/// Quantized caches, f32 weights: both sides write the same codes (the
/// kv_write kernels match bit for bit), but a K or V element a rounding
/// step from a code boundary lands on the next code on one side, and six
/// layers carry that on (measured: up to 5e-4).
constexpr Tolerance kQuantizedCache = {5e-3, 0.01};
/// Quantized weights: the CPU kernels round activations where the GPU's
/// linear keeps f32 (bf16 dot products, int8 codes for VNNI and int4, as
/// docs/cpu-kernels.md documents; measured: up to 0.1, f16 weights 1e-6).
/// A launch reading the wrong data is off by the logits' whole scale.
constexpr Tolerance kQuantizedWeights = {0.2, 0.1};

/// The largest |got - want| / (1 + |want|) over two steps' logits; a NaN
/// anywhere, or rows of another size, is infinitely far.
double worstLogitDiff(const std::vector<float> &got,
                      const std::vector<float> &want) {
  if (got.size() != want.size())
    return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = std::fabs(double(got[i]) - double(want[i])) /
               (1.0 + std::fabs(double(want[i])));
    if (std::isnan(d))
      return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

/// Which batches a comparison runs: Short, a prefill of two prompts (one
/// crossing a KV block) and a decode of both; Mixed, then a decode alone
/// and a decode beside a new prompt's chunk; Long, then a 260-token prompt
/// and a decode whose context the decode kernel splits in two partitions
/// (the combine kernel runs).
enum class Batches { Short, Mixed, Long };

/// Runs the same batches on both executors and compares the logits.
void expectSameForwards(const std::shared_ptr<plan::Plan> &p, Tolerance tol,
                        Batches shape) {
  ASSERT_TRUE(p);
  const int32_t spread =
      int32_t(std::min<int64_t>(4000, p->configValue("vocab", 4096) - 3));
  auto tokens = [&](int n, int32_t seed) {
    return test::tokens(n, seed, spread);
  };
  std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
  std::unique_ptr<exec::Executor> gpu = cudaExecutor();
  ASSERT_TRUE(gpu);
  EXPECT_STREQ(gpu->deviceName(), "cuda");
  ASSERT_TRUE(cpu->load(p));
  Status loaded = gpu->load(p);
  ASSERT_TRUE(bool(loaded)) << loaded.message();
  EXPECT_EQ(gpu->kvCacheLayout().bytesPerBlock,
            cpu->kvCacheLayout().bytesPerBlock);
  const int64_t numBlocks = 40;
  ASSERT_TRUE(cpu->allocateKVCache(numBlocks));
  ASSERT_TRUE(gpu->allocateKVCache(numBlocks));

  Sequences seqs;
  int a = seqs.add(), b = seqs.add(), c = seqs.add();
  std::vector<exec::ForwardBatch> steps;
  steps.push_back(seqs.step({a, b}, {tokens(3, 1), tokens(17, 2)}));
  steps.push_back(seqs.step({a, b}, {tokens(1, 4), tokens(1, 5)}));
  if (shape != Batches::Short) {
    steps.push_back(seqs.step({a}, {tokens(1, 3)}));
    steps.push_back(seqs.step({b, c}, {tokens(1, 6), tokens(5, 7)}));
  }
  if (shape == Batches::Long) {
    steps.push_back(seqs.step({c}, {tokens(260, 8)}));
    steps.push_back(
        seqs.step({a, b, c}, {tokens(1, 9), tokens(1, 10), tokens(1, 11)}));
  }
  int i = 0;
  for (const exec::ForwardBatch &batch : steps) {
    SCOPED_TRACE("step " + std::to_string(i++));
    std::vector<float> want, got;
    int64_t wantVocab = 0, gotVocab = 0;
    Status s = cpu->forward(batch, want, wantVocab);
    ASSERT_TRUE(bool(s)) << s.message();
    s = gpu->forward(batch, got, gotVocab);
    ASSERT_TRUE(bool(s)) << s.message();
    ASSERT_EQ(gotVocab, wantVocab);
    ASSERT_EQ(got.size(), want.size());
    double worst = worstLogitDiff(got, want);
    EXPECT_LT(worst, tol.logits);
    for (size_t r = 0; r < batch.logitsIndices.size(); ++r) {
      auto first = [&](const std::vector<float> &l) {
        return l.begin() + std::ptrdiff_t(r * size_t(wantVocab));
      };
      std::vector<float> row(first(want), first(want) + wantVocab);
      int64_t top = std::max_element(row.begin(), row.end()) - row.begin();
      float best = row[size_t(top)];
      row[size_t(top)] = -INFINITY;
      float second = *std::max_element(row.begin(), row.end());
      if (best - second <= tol.margin * (1.0f + std::fabs(best)))
        continue;
      EXPECT_EQ(std::max_element(first(got), first(got) + wantVocab) -
                    first(got),
                top)
          << "row " << r;
    }
  }
}

TEST(CudaExecutor, MatchesTheCpuInF32) {
  expectSameForwards(bundledPlan("sm_90a", "f32", "f32"), kExact,
                     Batches::Long);
}

TEST(CudaExecutor, MatchesTheCpuWithEveryCacheDtype) {
  // fp8 is Hopper's default, int8 Ampere's.
  for (const char *cache : {"auto", "bf16", "int4"}) {
    SCOPED_TRACE(cache);
    expectSameForwards(bundledPlan("sm_90a", "f32", cache), kQuantizedCache,
                       Batches::Mixed);
  }
  ::setenv("FOLIO_FAKE_CUDA_CC", "80", 1);
  expectSameForwards(bundledPlan("sm_80", "f32"), kQuantizedCache,
                     Batches::Mixed);
  ::unsetenv("FOLIO_FAKE_CUDA_CC");
}

TEST(CudaExecutor, MatchesTheCpuWithEveryWeightDtype) {
  for (const char *dtype : {"bf16", "f16", "int8", "fp8_e4m3", "int4"}) {
    SCOPED_TRACE(dtype);
    expectSameForwards(bundledPlan("sm_90a", dtype), kQuantizedWeights,
                       Batches::Short);
  }
}

/// `p` with its tied table's lookup record replaced by an f32 constant
/// holding every row that lookup reads (cpu::embeddingRows over all ids):
/// the same function computed from an unpacked table.
std::shared_ptr<plan::Plan> withWidenedTable(const plan::Plan &p) {
  auto q = std::make_shared<plan::Plan>(p);
  q->deviceKernels.clear();
  for (size_t i = 0; i < q->weights.size(); ++i) {
    const plan::StoredWeight w = q->weights[i];
    if (q->steps[size_t(w.step)].kind != "embedding")
      continue;
    cpu::WeightView v;
    Status viewed = exec::storedWeightView(*q, w, v);
    EXPECT_TRUE(viewed) << viewed.message();
    std::vector<int32_t> ids(size_t(w.n));
    std::iota(ids.begin(), ids.end(), 0);
    std::vector<float> rows(size_t(w.n * w.k));
    EXPECT_TRUE(cpu::embeddingRows(ids.data(), w.n, v, rows.data(), 1.0f).ok());
    plan::Constant c;
    c.value = q->steps[size_t(w.step)].operands[0];
    c.bytes = rows.size() * 4;
    c.offset = q->blob.append(rows.data(), c.bytes);
    q->values[size_t(c.value)].type = plan::ElemType::F32;
    q->constants.push_back(c);
    q->weights.erase(q->weights.begin() + std::ptrdiff_t(i));
    return q;
  }
  ADD_FAILURE() << "the plan has no stored table";
  return q;
}

/// The logits of two prefills and a decode step of `p` on `e`.
std::vector<float> shortRunLogits(exec::Executor &e,
                                  const std::shared_ptr<plan::Plan> &p) {
  std::vector<float> all;
  Status s = e.load(p);
  EXPECT_TRUE(bool(s)) << s.message();
  if (!s || !e.allocateKVCache(16))
    return all;
  const int32_t spread = int32_t(p->configValue("vocab", 0) - 3);
  Sequences seqs;
  int a = seqs.add(), b = seqs.add();
  for (const exec::ForwardBatch &batch :
       {seqs.step({a, b}, {tokens(3, 1, spread), tokens(17, 2, spread)}),
        seqs.step({a, b}, {tokens(1, 4, spread), tokens(1, 5, spread)})}) {
    std::vector<float> logits;
    int64_t vocab = 0;
    s = e.forward(batch, logits, vocab);
    EXPECT_TRUE(bool(s)) << s.message();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(CudaExecutor, LooksATiedTableUpInItsLmHeadsCodes) {
  // A quantized tied lm_head is the plan's only copy of the table: the
  // lookup launches the packed-table gather over the lm_head's stored
  // ranges. It must compute exactly what the same plan computes from an
  // f32 table of the rows those codes stand for, on the device (a wrongly
  // bound scale, param or outlier range would not) and on the CPU.
  // (Against the CPU, this random-weight Qwen2's quantized linears differ
  // by more than kQuantizedWeights, shared table or not.)
  for (const char *dtype : {"int8", "fp8_e4m3", "int4"}) {
    SCOPED_TRACE(dtype);
    std::shared_ptr<plan::Plan> shared = gpuPlan(
        tiedModelPath(FOLIO_SOURCE_DIR), "sm_90a", dtype, "auto", false);
    ASSERT_TRUE(shared);
    std::shared_ptr<plan::Plan> widened = withWidenedTable(*shared);
    for (const std::shared_ptr<plan::Plan> &p : {shared, widened}) {
      std::vector<compiler::EmbeddedCudaKernel> embedded;
      std::vector<std::string> notGenerated;
      cuda::KernelCacheOptions noCache;
      noCache.enabled = false;
      ASSERT_TRUE(compiler::embedCudaKernels(*p, "sm_90a", noCache, embedded,
                                             notGenerated));
      EXPECT_TRUE(notGenerated.empty());
    }
    std::unique_ptr<exec::Executor> gpuShared = cudaExecutor(),
                                    gpuWidened = cudaExecutor();
    ASSERT_TRUE(gpuShared && gpuWidened);
    std::vector<float> a = shortRunLogits(*gpuShared, shared),
                       b = shortRunLogits(*gpuWidened, widened);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, b) << "the device's packed lookup";
    std::unique_ptr<exec::Executor> cpuShared = exec::createCPUExecutor(),
                                    cpuWidened = exec::createCPUExecutor();
    std::vector<float> c = shortRunLogits(*cpuShared, shared),
                       d = shortRunLogits(*cpuWidened, widened);
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c, d) << "the CPU's packed lookup";
  }
}

/// A counter that a fake library loaded in this process keeps
/// (folioFakeCublasLtMatmuls, folioFakeCudaGraphLaunches, ...).
long fakeCount(const char *library, const char *counter) {
  void *lib = ::dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  auto count =
      lib ? reinterpret_cast<long (*)()>(::dlsym(lib, counter)) : nullptr;
  EXPECT_TRUE(count) << library << " is not loaded";
  return count ? count() : -1;
}

/// GEMMs the fake cuBLASLt has run in this process.
long cublasMatmuls() {
  return fakeCount(FOLIO_FAKE_CUBLASLT, "folioFakeCublasLtMatmuls");
}

/// A CUDA executor with `p` loaded and a cache of `blocks` blocks.
std::unique_ptr<exec::Executor>
loadedGpu(std::shared_ptr<plan::Plan> p, int64_t blocks,
          const exec::ExecutorOptions &options = {}) {
  std::unique_ptr<exec::Executor> gpu = cudaExecutor(options);
  if (!p || !gpu)
    return nullptr;
  Status s = gpu->load(p);
  EXPECT_TRUE(bool(s)) << s.message();
  if (!s || !gpu->allocateKVCache(blocks))
    return nullptr;
  return gpu;
}

// With bf16 or f16 weights, a batch of more rows than the linear kernel
// takes in one pass goes through cuBLASLt (its input cast to the weight's
// type first); decode steps stay on the linear kernel. The f16 prefill's
// logits follow the CPU's (its input rounded to f16 for the GEMM).
TEST(CudaExecutor, PrefillGemmsOf16BitWeightsGoThroughCublasLt) {
  for (const char *dtype : {"bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", dtype, "f32");
    std::unique_ptr<exec::Executor> gpu = loadedGpu(p, 8);
    ASSERT_TRUE(gpu);
    std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
    ASSERT_TRUE(cpu->load(p));
    ASSERT_TRUE(cpu->allocateKVCache(8));
    Sequences seqs;
    int a = seqs.add(), b = seqs.add();
    std::vector<float> logits, want;
    int64_t vocab = 0;
    long before = cublasMatmuls();
    exec::ForwardBatch prefill =
        seqs.step({a, b}, {tokens(3, 1), tokens(17, 2)});
    ASSERT_TRUE(gpu->forward(prefill, logits, vocab));
    // Six layers of qkv, o, gate-up and down over 20 rows; the lm_head
    // reads the 2 logits rows, one pass of the linear kernel.
    EXPECT_EQ(cublasMatmuls() - before, 24);
    ASSERT_TRUE(cpu->forward(prefill, want, vocab));
    EXPECT_LT(worstLogitDiff(logits, want), kQuantizedWeights.logits);
    before = cublasMatmuls();
    ASSERT_TRUE(gpu->forward(seqs.step({a, b}, {tokens(1, 4), tokens(1, 5)}),
                             logits, vocab));
    EXPECT_EQ(cublasMatmuls() - before, 0);
  }
}

// A linear cuBLASLt has no algorithm for runs the linear kernel instead, in
// that step and after, with one warning per linear: the fake library finds
// none for the down projections' inner dimension.
TEST(CudaExecutor, LinearsCublasLtCannotRunTakeTheLinearKernel) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16", "f32");
  ASSERT_TRUE(p);
  int64_t k = 0;
  for (const plan::StoredWeight &w : p->weights)
    k = std::max(k, w.k);
  int withK = 0;
  for (const plan::StoredWeight &w : p->weights)
    withK += w.k == k;
  ASSERT_GT(withK, 0);
  exec::ExecutorOptions options;
  std::vector<std::string> warnings;
  options.warn = [&](const std::string &w) { warnings.push_back(w); };
  std::unique_ptr<exec::Executor> gpu = loadedGpu(p, 16, options);
  ASSERT_TRUE(gpu);
  std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
  ASSERT_TRUE(cpu->load(p));
  ASSERT_TRUE(cpu->allocateKVCache(16));
  ::setenv("FOLIO_FAKE_CUBLASLT_NO_ALGORITHM", std::to_string(k).c_str(), 1);
  Sequences seqs;
  int a = seqs.add(), b = seqs.add();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    exec::ForwardBatch prefill =
        seqs.step({a, b}, {tokens(7, 1 + round), tokens(13, 3 + round)});
    std::vector<float> logits, want;
    int64_t vocab = 0;
    long before = cublasMatmuls();
    Status s = gpu->forward(prefill, logits, vocab);
    ASSERT_TRUE(bool(s)) << s.message();
    EXPECT_EQ(cublasMatmuls() - before, 24 - withK);
    ASSERT_TRUE(cpu->forward(prefill, want, vocab));
    EXPECT_LT(worstLogitDiff(logits, want), kQuantizedWeights.logits);
  }
  ::unsetenv("FOLIO_FAKE_CUBLASLT_NO_ALGORITHM");
  ASSERT_EQ(warnings.size(), size_t(withK));
  EXPECT_NE(warnings[0].find("has no algorithm for a bf16 GEMM"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("runs the linear kernel instead"),
            std::string::npos)
      << warnings[0];
}

// With int8, fp8_e4m3 or int4 weights, a batch of more rows than the
// linear kernel would stream the weights in cheaply (5 passes of 8 rows for
// the 8-bit types, 9 for int4) goes through cuBLASLt: its input cast to
// bf16 and each weight dequantized to bf16 rows first. Fewer rows, and
// decode, stay on the linear kernel. The logits follow the CPU's.
TEST(CudaExecutor, PrefillGemmsOf8And4BitWeightsDequantizeForCublasLt) {
  // (fp8_e4m3 weights take this path where the device or the library has
  // no fp8 GEMM: see PrefillGemmsOfFp8WeightsRunOnFp8TensorCores.)
  ::setenv("FOLIO_FAKE_CUBLASLT_NO_FP8", "1", 1);
  for (const char *dtype : {"int8", "fp8_e4m3", "int4"}) {
    SCOPED_TRACE(dtype);
    const bool int4 = std::string(dtype) == "int4";
    std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", dtype, "f32");
    std::unique_ptr<exec::Executor> gpu = loadedGpu(p, 32);
    ASSERT_TRUE(gpu);
    std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
    ASSERT_TRUE(cpu->load(p));
    ASSERT_TRUE(cpu->allocateKVCache(32));
    Sequences seqs;
    int a = seqs.add(), b = seqs.add(), c = seqs.add();
    std::vector<float> logits, want;
    int64_t vocab = 0;
    auto expectClose = [&] {
      EXPECT_LT(worstLogitDiff(logits, want), kQuantizedWeights.logits);
    };
    // 40 rows: at most 5 passes, the linear kernel everywhere.
    long before = cublasMatmuls();
    exec::ForwardBatch first =
        seqs.step({a, b}, {tokens(15, 1), tokens(25, 2)});
    ASSERT_TRUE(gpu->forward(first, logits, vocab));
    EXPECT_EQ(cublasMatmuls() - before, 0);
    ASSERT_TRUE(cpu->forward(first, want, vocab));
    expectClose();
    // 76 rows: past 5 passes; past 9 for int4 too.
    before = cublasMatmuls();
    exec::ForwardBatch second =
        seqs.step({c, a}, {tokens(70, 3), tokens(6, 4)});
    ASSERT_TRUE(gpu->forward(second, logits, vocab));
    // Six layers of qkv, o, gate-up and down; the lm_head reads the 2
    // logits rows.
    EXPECT_EQ(cublasMatmuls() - before, 24);
    ASSERT_TRUE(cpu->forward(second, want, vocab));
    expectClose();
    // 48 rows: cuBLASLt for the 8-bit types, the linear kernel for int4.
    before = cublasMatmuls();
    exec::ForwardBatch third =
        seqs.step({b, c}, {tokens(24, 5), tokens(24, 6)});
    ASSERT_TRUE(gpu->forward(third, logits, vocab));
    EXPECT_EQ(cublasMatmuls() - before, int4 ? 0 : 24);
    ASSERT_TRUE(cpu->forward(third, want, vocab));
    expectClose();
    before = cublasMatmuls();
    ASSERT_TRUE(gpu->forward(
        seqs.step({a, b, c}, {tokens(1, 7), tokens(1, 8), tokens(1, 9)}),
        logits, vocab));
    EXPECT_EQ(cublasMatmuls() - before, 0);
  }
  EXPECT_EQ(fakeCount(FOLIO_FAKE_CUBLASLT, "folioFakeCublasLtFp8Matmuls"), 0);
  ::unsetenv("FOLIO_FAKE_CUBLASLT_NO_FP8");
}

/// Teacher-forced perplexity of `exec` (a cache of 64 blocks) over the
/// first `windows` windows of `length` held-out tokens of the bundled
/// model, each window prefilled in one step with every row's logits.
double heldOutPerplexity(exec::Executor &exec, int windows, int length) {
  std::ifstream in(FOLIO_SOURCE_DIR "/models/bundled/heldout_slice.i32",
                   std::ios::binary);
  std::vector<int32_t> ids(size_t(windows * length));
  in.read(reinterpret_cast<char *>(ids.data()),
          std::streamsize(ids.size() * 4));
  if (!in) {
    ADD_FAILURE() << "the held-out slice is short";
    return INFINITY;
  }
  Sequences seqs;
  std::vector<int> all;
  std::vector<std::vector<int32_t>> tokens;
  for (int w = 0; w < windows; ++w) {
    all.push_back(seqs.add());
    tokens.emplace_back(ids.begin() + w * length,
                        ids.begin() + (w + 1) * length);
  }
  exec::ForwardBatch b = seqs.step(all, tokens);
  b.logitsIndices.clear();
  for (int32_t t = 0; t < int32_t(b.tokens.size()); ++t)
    b.logitsIndices.push_back(t);
  std::vector<float> logits;
  int64_t vocab = 0;
  if (Status s = exec.forward(b, logits, vocab); !s) {
    ADD_FAILURE() << s.message();
    return INFINITY;
  }
  double nll = 0;
  int64_t count = 0;
  for (int w = 0; w < windows; ++w)
    for (int t = 0; t + 1 < length; ++t) {
      const float *row = logits.data() + size_t(w * length + t) * size_t(vocab);
      double mx = *std::max_element(row, row + vocab), sum = 0;
      for (int64_t v = 0; v < vocab; ++v)
        sum += std::exp(double(row[v]) - mx);
      nll += mx + std::log(sum) - row[tokens[size_t(w)][size_t(t + 1)]];
      ++count;
    }
  return std::exp(nll / double(count));
}

/// fp8 GEMMs the fake cuBLASLt has run in this process.
long fp8Matmuls() {
  return fakeCount(FOLIO_FAKE_CUBLASLT, "folioFakeCublasLtFp8Matmuls");
}

// On sm_89 and later, fp8_e4m3 weights' prefill GEMMs run on fp8 tensor
// cores: x's rows quantized to e4m3 with a scale each, cuBLASLt's GEMM
// scaling rows by those and columns by the weight's scales. The same row
// threshold as the bf16 path; decode stays on the linear kernel. Where the
// library refuses the fp8 GEMM, each linear warns once and takes the bf16
// path in that same step; an sm_86 device never asks for it.
TEST(CudaExecutor, PrefillGemmsOfFp8WeightsRunOnFp8TensorCores) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "fp8_e4m3", "f32");
  std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
  ASSERT_TRUE(cpu->load(p));
  ASSERT_TRUE(cpu->allocateKVCache(32));
  std::vector<std::string> warnings;
  exec::ExecutorOptions options;
  options.warn = [&](const std::string &w) { warnings.push_back(w); };
  std::unique_ptr<exec::Executor> gpu = loadedGpu(p, 32, options);
  ASSERT_TRUE(gpu);
  Sequences seqs;
  int a = seqs.add(), b = seqs.add(), c = seqs.add();
  std::vector<float> logits, want;
  int64_t vocab = 0;
  // 40 rows: the linear kernel.
  long all = cublasMatmuls(), fp8 = fp8Matmuls();
  exec::ForwardBatch first = seqs.step({a, b}, {tokens(15, 1), tokens(25, 2)});
  ASSERT_TRUE(gpu->forward(first, logits, vocab));
  EXPECT_EQ(cublasMatmuls() - all, 0);
  // 76 rows: 24 fp8 GEMMs and no other. x in e4m3 moves the logits more
  // than bf16 x does (measured: 0.079, against 0.008).
  all = cublasMatmuls();
  exec::ForwardBatch second = seqs.step({c, a}, {tokens(70, 3), tokens(6, 4)});
  ASSERT_TRUE(gpu->forward(second, logits, vocab));
  EXPECT_EQ(fp8Matmuls() - fp8, 24);
  EXPECT_EQ(cublasMatmuls() - all, 24);
  ASSERT_TRUE(cpu->forward(first, want, vocab));
  ASSERT_TRUE(cpu->forward(second, want, vocab));
  const double fp8Diff = worstLogitDiff(logits, want);
  std::printf("fp8 x: worst logit difference %.3g\n", fp8Diff);
  EXPECT_LT(fp8Diff, kQuantizedWeights.logits);
  // Decode: none.
  all = cublasMatmuls();
  ASSERT_TRUE(gpu->forward(
      seqs.step({a, b, c}, {tokens(1, 7), tokens(1, 8), tokens(1, 9)}), logits,
      vocab));
  EXPECT_EQ(cublasMatmuls() - all, 0);
  EXPECT_TRUE(warnings.empty()) << warnings.front();

  // A library without row-scaled fp8 GEMMs: each linear warns once and
  // runs the bf16 GEMM in the same step, and in the next without asking.
  ::setenv("FOLIO_FAKE_CUBLASLT_NO_FP8", "1", 1);
  std::unique_ptr<exec::Executor> refused = loadedGpu(p, 32, options);
  ASSERT_TRUE(refused);
  Sequences again;
  int d = again.add(), e = again.add();
  for (int round = 0; round < 2; ++round) {
    all = cublasMatmuls();
    fp8 = fp8Matmuls();
    ASSERT_TRUE(refused->forward(
        again.step({d, e}, {tokens(40, 10 + round), tokens(36, 20 + round)}),
        logits, vocab));
    EXPECT_EQ(fp8Matmuls() - fp8, 0);
    EXPECT_EQ(cublasMatmuls() - all, 24);
    EXPECT_EQ(warnings.size(), 24u);
  }
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("an fp8 (e4m3, row-scaled) GEMM"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("takes its x in bf16 instead"), std::string::npos)
      << warnings[0];
  ::unsetenv("FOLIO_FAKE_CUBLASLT_NO_FP8");

  // sm_86: no fp8 tensor cores, the bf16 GEMMs.
  ::setenv("FOLIO_FAKE_CUDA_CC", "86", 1);
  std::unique_ptr<exec::Executor> ampere =
      loadedGpu(bundledPlan("sm_80", "fp8_e4m3", "f32"), 32, options);
  ASSERT_TRUE(ampere);
  Sequences third;
  int f = third.add();
  all = cublasMatmuls();
  fp8 = fp8Matmuls();
  ASSERT_TRUE(
      ampere->forward(third.step({f}, {tokens(76, 30)}), logits, vocab));
  EXPECT_EQ(fp8Matmuls() - fp8, 0);
  EXPECT_EQ(cublasMatmuls() - all, 24);
  EXPECT_EQ(warnings.size(), 24u);
  ::unsetenv("FOLIO_FAKE_CUDA_CC");
}

// x in e4m3 (per-token scales) keeps the bundled target's held-out
// perplexity within 1 % of the same fp8_e4m3 weights with x in bf16, and of
// f32 weights on the CPU (the weight-quant target for fp8). The fake
// cuBLASLt computes the fp8 GEMM's definition in f32.
TEST(CudaExecutor, Fp8ActivationsKeepTheHeldOutPerplexity) {
  const int windows = 3, length = 64; // 192 rows: the fp8 GEMMs
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "fp8_e4m3", "f32");
  std::unique_ptr<exec::Executor> fp8 = loadedGpu(p, 64);
  ASSERT_TRUE(fp8);
  long before = fp8Matmuls();
  const double withFp8 = heldOutPerplexity(*fp8, windows, length);
  // Six layers' four, and the lm_head over every row.
  EXPECT_EQ(fp8Matmuls() - before, 25);
  ::setenv("FOLIO_FAKE_CUBLASLT_NO_FP8", "1", 1);
  std::unique_ptr<exec::Executor> bf16 = loadedGpu(p, 64);
  ASSERT_TRUE(bf16);
  const double withBf16 = heldOutPerplexity(*bf16, windows, length);
  ::unsetenv("FOLIO_FAKE_CUBLASLT_NO_FP8");
  std::unique_ptr<exec::Executor> cpu = exec::createCPUExecutor();
  ASSERT_TRUE(cpu->load(bundledPlan("cpu", "f32", "f32")));
  ASSERT_TRUE(cpu->allocateKVCache(64));
  const double f32 = heldOutPerplexity(*cpu, windows, length);
  std::printf("held-out perplexity: f32 weights (CPU) %.4f, fp8 weights "
              "with bf16 x %.4f (%+.3f %%), with e4m3 x %.4f (%+.3f %%)\n",
              f32, withBf16, 100 * (withBf16 / f32 - 1), withFp8,
              100 * (withFp8 / f32 - 1));
  EXPECT_LT(std::fabs(withFp8 / withBf16 - 1), 0.01);
  EXPECT_LT(std::fabs(withFp8 / f32 - 1), 0.01);
}

/// A counter of the fake driver's (folioFakeCudaGraphLaunches, ...).
long fakeDriverCount(const char *counter) {
  return fakeCount(FOLIO_FAKE_CUDA_DEVICE, counter);
}

// Decode steps run as CUDA graphs, one per batch bucket and context range,
// captured the first time (that step runs eagerly) and replayed after;
// their logits are the eager executor's bit for bit. Covered: padded
// buckets (3 -> 4, 12 and 13 -> 16), cuBLASLt's GEMMs inside a
// graph (16 rows of bf16 weights), a split context (the combine kernel),
// and graphs dropped when a buffer they read moves (a long prefill grows
// the step's buffers; a new KV cache).
TEST(CudaExecutor, DecodeStepsReplayCudaGraphs) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  exec::ExecutorOptions eagerOptions;
  eagerOptions.cudaGraphs = false;
  std::unique_ptr<exec::Executor> eager = loadedGpu(p, 64, eagerOptions),
                                  graphs = loadedGpu(p, 64);
  ASSERT_TRUE(eager && graphs);
  Sequences seqs;
  std::vector<int> all;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 13; ++i) {
    all.push_back(seqs.add());
    prompts.push_back(tokens(3 + i, i));
  }
  auto first = [&](int n) {
    return std::vector<int>(all.begin(), all.begin() + n);
  };
  struct Step {
    const char *what;
    exec::ForwardBatch batch;
    bool captures, replays;
  };
  auto decode = [&](const char *what, int n, bool captures) {
    std::vector<std::vector<int32_t>> next;
    for (int i = 0; i < n; ++i)
      next.push_back(tokens(1, 100 + i));
    return Step{what, seqs.step(first(n), next), captures, !captures};
  };
  std::vector<Step> steps;
  steps.push_back(
      {"prefill",
       seqs.step(first(12), std::vector(prompts.begin(), prompts.begin() + 12)),
       false, false});
  steps.push_back(decode("batch 1", 1, true));
  steps.push_back(decode("batch 1 again", 1, false));
  steps.push_back(decode("batch 3", 3, true));
  steps.push_back(decode("batch 12", 12, true));
  steps.push_back(decode("batch 12 again", 12, false));
  steps.push_back({"a long prefill", seqs.step({all[12]}, {tokens(260, 50)}),
                   false, false});
  steps.push_back(decode("batch 12 after the buffers grew", 12, true));
  steps.push_back(decode("batch 12 once more", 12, false));
  steps.push_back(decode("batch 13, split context", 13, true));
  steps.push_back(decode("batch 13 again", 13, false));
  // Its partial buffers grew (graphs dropped); both context ranges are
  // kept side by side after.
  steps.push_back(decode("batch 12 after the split", 12, true));
  steps.push_back(decode("batch 13 once more", 13, false));
  steps.push_back(decode("batch 12 once more", 12, false));
  for (const Step &step : steps) {
    SCOPED_TRACE(step.what);
    long captures = fakeDriverCount("folioFakeCudaCaptures"),
         replays = fakeDriverCount("folioFakeCudaGraphLaunches"),
         direct = fakeDriverCount("folioFakeCudaDirectLaunches"),
         gemms = cublasMatmuls();
    std::vector<float> got, want;
    int64_t gotVocab = 0, wantVocab = 0;
    Status s = graphs->forward(step.batch, got, gotVocab);
    ASSERT_TRUE(bool(s)) << s.message();
    EXPECT_EQ(fakeDriverCount("folioFakeCudaCaptures") - captures,
              step.captures ? 1 : 0);
    EXPECT_EQ(fakeDriverCount("folioFakeCudaGraphLaunches") - replays,
              step.replays ? 1 : 0);
    if (step.replays) {
      EXPECT_EQ(fakeDriverCount("folioFakeCudaDirectLaunches"), direct);
      // 16 rows of bf16 weights: the graph replays cuBLASLt's GEMMs.
      if (step.batch.seqLens.size() > 8)
        EXPECT_GE(cublasMatmuls() - gemms, 24);
    }
    ASSERT_TRUE(eager->forward(step.batch, want, wantVocab));
    ASSERT_EQ(gotVocab, wantVocab);
    ASSERT_EQ(got.size(), step.batch.logitsIndices.size() * size_t(wantVocab));
    EXPECT_EQ(got, want);
  }
  // A new cache moves the pools every graph reads: captured again.
  ASSERT_TRUE(graphs->allocateKVCache(64));
  ASSERT_TRUE(eager->allocateKVCache(64));
  long captures = fakeDriverCount("folioFakeCudaCaptures");
  Step again = decode("batch 1 on a new cache", 1, true);
  std::vector<float> got, want;
  int64_t vocab = 0;
  ASSERT_TRUE(graphs->forward(again.batch, got, vocab));
  ASSERT_TRUE(eager->forward(again.batch, want, vocab));
  EXPECT_EQ(fakeDriverCount("folioFakeCudaCaptures") - captures, 1);
  EXPECT_EQ(got, want);
}

// A driver that refuses to instantiate or to launch a graph does not fail
// the step: the executor warns once, turns graphs off, and that step and
// every later one run eagerly, to the eager executor's logits.
TEST(CudaExecutor, GraphsTheDriverRefusesFallBackToEagerSteps) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  for (const char *call : {"instantiate", "launch"}) {
    SCOPED_TRACE(call);
    exec::ExecutorOptions eagerOptions, graphOptions;
    eagerOptions.cudaGraphs = false;
    std::vector<std::string> warnings;
    graphOptions.warn = [&](const std::string &w) { warnings.push_back(w); };
    std::unique_ptr<exec::Executor> eager = loadedGpu(p, 64, eagerOptions),
                                    graphs = loadedGpu(p, 64, graphOptions);
    ASSERT_TRUE(eager && graphs);
    Sequences seqs;
    std::vector<int> all;
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 3; ++i) {
      all.push_back(seqs.add());
      prompts.push_back(tokens(4 + i, i));
    }
    std::vector<exec::ForwardBatch> steps;
    steps.push_back(seqs.step(all, prompts));
    for (int t = 0; t < 4; ++t)
      steps.push_back(seqs.step(
          all, {tokens(1, 10 + t), tokens(1, 20 + t), tokens(1, 30 + t)}));
    // Instantiation fails at the first decode step's capture; a launch at
    // the second's replay (the first captured).
    ::setenv("FOLIO_FAKE_CUDA_FAIL_GRAPHS", call, 1);
    long captures = fakeDriverCount("folioFakeCudaCaptures");
    for (size_t i = 0; i < steps.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      std::vector<float> got, want;
      int64_t gotVocab = 0, wantVocab = 0;
      Status s = graphs->forward(steps[i], got, gotVocab);
      ASSERT_TRUE(bool(s)) << s.message();
      ASSERT_TRUE(eager->forward(steps[i], want, wantVocab));
      EXPECT_EQ(got, want);
    }
    ::unsetenv("FOLIO_FAKE_CUDA_FAIL_GRAPHS");
    EXPECT_EQ(fakeDriverCount("folioFakeCudaCaptures") - captures, 1)
        << "captured again after graphs were turned off";
    ASSERT_EQ(warnings.size(), 1u);
    const std::string &w = warnings[0];
    // Three sequences run in the bucket of four.
    EXPECT_NE(w.find(std::string(call) == "instantiate"
                         ? "capturing decode steps of up to 4 sequences"
                         : "replaying decode steps of up to 4 sequences"),
              std::string::npos)
        << w;
    EXPECT_NE(w.find("CUDA_ERROR_NOT_SUPPORTED"), std::string::npos) << w;
    EXPECT_NE(w.find("without CUDA graphs from now on"), std::string::npos)
        << w;
    // Still eager with the driver healthy again.
    long replays = fakeDriverCount("folioFakeCudaGraphLaunches");
    std::vector<float> got;
    int64_t vocab = 0;
    ASSERT_TRUE(graphs->forward(
        seqs.step(all, {tokens(1, 1), tokens(1, 2), tokens(1, 3)}), got,
        vocab));
    EXPECT_EQ(fakeDriverCount("folioFakeCudaGraphLaunches"), replays);
  }
}

// With profiling on, every launch is timed between events and counted by
// kind, with the host's time enqueuing it; the results do not change.
TEST(CudaExecutor, ProfilesEveryLaunchByKind) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16", "f32");
  ASSERT_TRUE(p);
  exec::ExecutorOptions options;
  options.profile = true;
  std::unique_ptr<exec::Executor> profiled = cudaExecutor(options),
                                  plain = cudaExecutor();
  ASSERT_TRUE(profiled && plain);
  for (exec::Executor *e : {profiled.get(), plain.get()}) {
    Status s = e->load(p);
    ASSERT_TRUE(bool(s)) << s.message();
    ASSERT_TRUE(e->allocateKVCache(8));
  }
  EXPECT_TRUE(profiled->profile().empty());
  Sequences seqs;
  int a = seqs.add(), b = seqs.add();
  const std::vector<exec::ForwardBatch> steps = {
      seqs.step({a, b}, {tokens(3, 1), tokens(17, 2)}),
      seqs.step({a, b}, {tokens(1, 4), tokens(1, 5)})};
  for (const exec::ForwardBatch &step : steps) {
    std::vector<float> got, want;
    int64_t vocab = 0;
    Status s = profiled->forward(step, got, vocab);
    ASSERT_TRUE(bool(s)) << s.message();
    ASSERT_TRUE(plain->forward(step, want, vocab));
    EXPECT_EQ(got, want);
  }
  std::map<std::string, exec::KindProfile> byKind;
  for (const exec::KindProfile &k : profiled->profile()) {
    EXPECT_GE(k.seconds, 0.0) << k.kind;
    EXPECT_GT(k.hostSeconds, 0.0) << k.kind;
    byKind[k.kind] = k;
  }
  // Six layers: the prefill's four GEMMs each through cuBLASLt, the
  // decode's on the linear kernel (and both steps' lm_head).
  EXPECT_EQ(byKind["linear (cuBLASLt, bf16 weights)"].calls, 24);
  EXPECT_EQ(byKind["linear (bf16 weights)"].calls, 26);
  EXPECT_EQ(byKind["kv_write"].calls, 12);
  EXPECT_EQ(byKind["paged_prefill"].calls, 6);
  EXPECT_EQ(byKind["paged_decode"].calls, 6);
  EXPECT_EQ(byKind["embedding"].calls, 2);
  EXPECT_EQ(byKind["inputs to the device"].calls, 2);
  EXPECT_EQ(byKind["logits to the host"].calls, 2);
  profiled->resetProfile();
  EXPECT_TRUE(profiled->profile().empty());
}

// Speculative verification reads the logits the forward brought back: the
// plan's verify entry on the host, as on the CPU.
TEST(CudaExecutor, VerifiesOnTheHostLogits) {
  std::unique_ptr<exec::Executor> gpu =
      loadedGpu(bundledPlan("sm_90a", "f32", "f32"), 8);
  ASSERT_TRUE(gpu);
  Sequences seqs;
  int a = seqs.add();
  // The prompt, then three drafts: the logits of the last four tokens.
  exec::ForwardBatch b = seqs.step({a}, {tokens(6, 1)});
  b.logitsIndices = {2, 3, 4, 5};
  std::vector<float> logits;
  int64_t vocab = 0;
  ASSERT_TRUE(gpu->forward(b, logits, vocab));
  std::vector<int32_t> greedy(4);
  for (size_t r = 0; r < 4; ++r)
    greedy[r] =
        int32_t(std::max_element(
                    logits.begin() + std::ptrdiff_t(r * size_t(vocab)),
                    logits.begin() + std::ptrdiff_t((r + 1) * size_t(vocab))) -
                (logits.begin() + std::ptrdiff_t(r * size_t(vocab))));
  // Drafts: the first two the target's own choices, the third not.
  std::vector<int32_t> drafts = {greedy[0], greedy[1], (greedy[2] + 1) % 4096};
  exec::VerifyBatch v;
  v.numSeqs = 1;
  v.numDraft = 3;
  v.vocab = vocab;
  v.targetLogits = logits.data();
  v.draftTokens = drafts.data();
  std::vector<int32_t> accepted, out;
  Status s = gpu->verify(v, accepted, out);
  ASSERT_TRUE(bool(s)) << s.message();
  EXPECT_EQ(accepted, std::vector<int32_t>{2});
  EXPECT_EQ(out, (std::vector<int32_t>{greedy[0], greedy[1], greedy[2], -1}));
}

// The GPU check's whole-model measurement (tools/folio-gpu-bench/Model.h)
// at tiny sizes: checked against the CPU first, then timed.
TEST(CudaExecutor, GpuBenchMeasuresAWholeModel) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  ASSERT_TRUE(cudaExecutor()); // registers the kernels
  Expected<std::unique_ptr<device::CudaDevice>> dev =
      device::CudaDevice::open();
  ASSERT_TRUE(bool(dev)) << dev.status().message();
  gpubench::ModelCase c;
  c.prompt = 9;
  c.batches = {1, 2};
  c.context = 18;
  c.steps = 2;
  c.checkTokens = 5;
  c.prefillRuns = 2;
  c.profile = true;
  Expected<gpubench::ModelResult> r =
      gpubench::measureModel(std::move(*dev), p, c);
  ASSERT_TRUE(bool(r)) << r.status().message();
  // The profiled pass: the prefill, then each batch size's decode steps,
  // every launch counted per step (six layers).
  ASSERT_EQ(r->profiles.size(), 3u);
  EXPECT_EQ(r->profiles[0].what, "prefill");
  EXPECT_EQ(r->profiles[2].what, "decode");
  EXPECT_EQ(r->profiles[2].batch, 2);
  EXPECT_EQ(r->profiles[2].steps, 2);
  for (const gpubench::ModelProfile &prof : r->profiles) {
    EXPECT_GT(prof.wallMs, 0.0);
    std::map<std::string, double> calls;
    for (const gpubench::ModelProfileKind &k : prof.kinds)
      calls[k.kind] = k.calls;
    EXPECT_EQ(calls["kv_write"], 6.0) << prof.what;
    EXPECT_EQ(calls[prof.what == "prefill" ? "paged_prefill" : "paged_decode"],
              6.0)
        << prof.what;
    // Greedy tokens taken on the device, as the engine takes them.
    EXPECT_EQ(calls["sample (greedy)"], 1.0) << prof.what;
    EXPECT_EQ(calls["tokens to the host"], 1.0) << prof.what;
  }
  EXPECT_EQ(r->kvCache, "fp8_e4m3");
  EXPECT_GT(r->weightBytes, 0);
  EXPECT_LE(r->checkedDiff, c.tolerance);
  EXPECT_GT(r->prefillTokensPerS, 0);
  ASSERT_EQ(r->decode.size(), 2u);
  EXPECT_EQ(r->decode[1].batch, 2);
  EXPECT_GT(r->decode[1].tokensPerS, 0);
  EXPECT_GT(r->decode[1].eagerMsPerStep, 0);
  EXPECT_TRUE(r->warnings.empty());
  // Graphs the driver refuses: the timings are eager steps, and the result
  // says so.
  ::setenv("FOLIO_FAKE_CUDA_FAIL_GRAPHS", "instantiate", 1);
  c.profile = false;
  dev = device::CudaDevice::open();
  ASSERT_TRUE(bool(dev));
  r = gpubench::measureModel(std::move(*dev), p, c);
  ::unsetenv("FOLIO_FAKE_CUDA_FAIL_GRAPHS");
  ASSERT_TRUE(bool(r)) << r.status().message();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("capturing decode steps"), std::string::npos)
      << r->warnings[0];
  c.profile = true;
  // A wrong run is never timed.
  c.tolerance = 0;
  dev = device::CudaDevice::open();
  ASSERT_TRUE(bool(dev));
  r = gpubench::measureModel(std::move(*dev), p, c);
  ASSERT_FALSE(bool(r));
  EXPECT_NE(r.status().message().find("differ from the CPU executor's"),
            std::string::npos)
      << r.status().message();
}

/// Greedy completions of two prompts on an engine over `target` on the
/// GPU, with `speculative` (its drafts accepted in `accepted`).
/// A serving engine over `plan` on `executor` with a 4096 vocabulary,
/// `maxModelLen` tokens per request and `blocks` KV blocks of 16 tokens
/// (no prefix caching); null, with a test failure, where it cannot start.
std::unique_ptr<core::ServingEngine>
testEngine(std::shared_ptr<const plan::Plan> plan,
           std::unique_ptr<exec::Executor> executor,
           core::SpeculativeConfig speculative, int64_t maxModelLen,
           int64_t blocks) {
  SchedulerConfig config;
  config.maxModelLen = maxModelLen;
  config.vocabSize = 4096;
  KVCacheConfig kv;
  kv.numBlocks = blocks;
  kv.blockSize = 16;
  kv.enablePrefixCaching = false;
  auto engine = core::ServingEngine::create(
      std::move(plan), std::move(executor), config, kv, std::move(speculative));
  EXPECT_TRUE(bool(engine)) << engine.status().message();
  return engine ? std::move(*engine) : nullptr;
}

/// Steps `engine` until every request finished; each request's tokens
/// (every step and output must succeed).
/// Each request's tokens, and (where `logprobs`) their logprobs.
std::map<std::string, std::vector<TokenId>>
drain(core::ServingEngine &engine,
      std::map<std::string, std::vector<TokenLogprobs>> *logprobs = nullptr) {
  std::map<std::string, std::vector<TokenId>> out;
  while (engine.hasUnfinishedRequests()) {
    auto step = engine.step();
    EXPECT_TRUE(bool(step)) << step.status().message();
    if (!step)
      break;
    for (const RequestOutput &o : *step) {
      EXPECT_TRUE(o.error.empty()) << o.error;
      out[o.requestId].insert(out[o.requestId].end(), o.newTokenIds.begin(),
                              o.newTokenIds.end());
      if (logprobs)
        (*logprobs)[o.requestId].insert((*logprobs)[o.requestId].end(),
                                        o.newLogprobs.begin(),
                                        o.newLogprobs.end());
    }
  }
  return out;
}

std::map<std::string, std::vector<TokenId>>
serveOnGpu(std::shared_ptr<const plan::Plan> target,
           core::SpeculativeConfig speculative, uint64_t *accepted = nullptr,
           bool onCpu = false, float temperature = 0.0f, bool mixed = false) {
  std::map<std::string, std::vector<TokenId>> out;
  std::unique_ptr<exec::Executor> gpu =
      onCpu ? exec::createCPUExecutor() : cudaExecutor();
  if (!gpu)
    return out;
  auto engine = testEngine(std::move(target), std::move(gpu),
                           std::move(speculative), 64, 32);
  if (!engine)
    return out;
  for (int i = 0; i < 2; ++i) {
    NewRequest r;
    r.requestId = "r" + std::to_string(i);
    r.promptTokenIds = tokens(5 + 4 * i, i);
    r.samplingParams.temperature = temperature;
    r.samplingParams.topK = 50;
    r.samplingParams.topP = 0.9f;
    if (mixed) { // a greedy request beside a min-p one
      r.samplingParams.temperature = i == 0 ? 0.0f : temperature;
      r.samplingParams.minP = 0.05f;
    }
    r.samplingParams.seed = uint64_t(11 + i);
    r.samplingParams.maxTokens = 7;
    r.samplingParams.ignoreEos = true;
    EXPECT_TRUE(engine->addRequest(r));
  }
  out = drain(*engine);
  if (accepted)
    *accepted = engine->speculativeStats().numAccepted;
  return out;
}

// A draft model whose plan has kernels for the GPU runs there beside its
// target (the tools pass the target's --device to makeSpeculativeConfig),
// and greedy speculation writes what the target writes alone. The bundled
// target drafts for itself here: its kernels are the ones this test
// registers with the fake driver. A draft plan without GPU kernels is an
// error with `cuda` and runs on the CPU with `auto`.
TEST(CudaExecutor, DraftsRunOnTheGpuBesideTheTarget) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  ASSERT_TRUE(cudaExecutor()); // registers the kernels
  tools::SpeculativeFlags flags;
  flags.method = "draft";
  flags.model = "draft.folio";
  flags.adaptive = false;
  auto make = [&](std::shared_ptr<const plan::Plan> draft,
                  device::DeviceKind where) {
    return tools::makeSpeculativeConfig(flags, 3, std::move(draft), 4096, 64,
                                        31 * 16, {}, where);
  };
  Expected<core::SpeculativeConfig> onGpu = make(p, device::DeviceKind::Cuda);
  ASSERT_TRUE(bool(onGpu)) << onGpu.status().message();
  auto *draft = dynamic_cast<spec::DraftProposer *>(onGpu->proposer.get());
  ASSERT_TRUE(draft);
  EXPECT_STREQ(draft->deviceName(), "cuda");

  std::shared_ptr<plan::Plan> cpuPlan = bundledPlan("cpu", "bf16");
  Expected<core::SpeculativeConfig> refused =
      make(cpuPlan, device::DeviceKind::Cuda);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(refused.status().message().find(
                "--speculative-model draft.folio: --device cuda"),
            std::string::npos)
      << refused.status().message();
  Expected<core::SpeculativeConfig> onCpu =
      make(cpuPlan, device::DeviceKind::Auto);
  ASSERT_TRUE(bool(onCpu)) << onCpu.status().message();
  EXPECT_STREQ(
      dynamic_cast<spec::DraftProposer *>(onCpu->proposer.get())->deviceName(),
      "cpu");

  auto alone = serveOnGpu(p, {});
  uint64_t accepted = 0;
  auto speculated = serveOnGpu(p, std::move(*onGpu), &accepted);
  ASSERT_EQ(alone.size(), 2u);
  EXPECT_EQ(alone.at("r1").size(), 7u);
  EXPECT_EQ(speculated, alone);
  EXPECT_GE(accepted, 6u); // the target drafting for itself
}

/// An executor that counts the engine's calls and passes them on.
class CountingExecutor : public exec::Executor {
public:
  explicit CountingExecutor(std::unique_ptr<exec::Executor> inner)
      : inner(std::move(inner)) {}
  const char *deviceName() const override { return inner->deviceName(); }
  Status load(std::shared_ptr<const plan::Plan> p) override {
    return inner->load(std::move(p));
  }
  exec::KVCacheLayout kvCacheLayout() const override {
    return inner->kvCacheLayout();
  }
  Status allocateKVCache(int64_t n) override {
    return inner->allocateKVCache(n);
  }
  Status forward(const exec::ForwardBatch &b, std::vector<float> &logits,
                 int64_t &vocab) override {
    ++logitsCalls;
    return inner->forward(b, logits, vocab);
  }
  bool greedyOnDevice() const override { return inner->greedyOnDevice(); }
  Status forwardGreedy(const exec::ForwardBatch &b, std::vector<int32_t> &t,
                       int64_t &vocab) override {
    return inner->forwardGreedy(b, t, vocab);
  }
  bool samplesOnDevice() const override { return inner->samplesOnDevice(); }
  bool penalizesOnDevice() const override { return inner->penalizesOnDevice(); }
  bool logprobsOnDevice() const override { return inner->logprobsOnDevice(); }
  Status forwardSampled(const exec::ForwardBatch &b,
                        const std::vector<exec::DeviceDraw> &d,
                        std::vector<int32_t> &t,
                        std::vector<exec::DeviceLogprobs> &l,
                        int64_t &vocab) override {
    ++sampledCalls;
    return inner->forwardSampled(b, d, t, l, vocab);
  }
  bool verifiesOnDevice() const override {
    return !hideVerifier && inner->verifiesOnDevice();
  }
  Status forwardVerified(const exec::ForwardBatch &b,
                         const exec::DeviceVerify &v,
                         const std::vector<exec::DeviceDraw> &d,
                         std::vector<int32_t> &accepted,
                         std::vector<int32_t> &t,
                         std::vector<exec::DeviceLogprobs> &l,
                         int64_t &vocab) override {
    ++verifiedCalls;
    verifiedSeqs += v.numSeqs;
    for (const exec::DeviceDraw &draw : d)
      verifiedLogprobRows += draw.logprobs >= 0;
    return inner->forwardVerified(b, v, d, accepted, t, l, vocab);
  }
  Status verify(const exec::VerifyBatch &b, std::vector<int32_t> &accepted,
                std::vector<int32_t> &t) override {
    return inner->verify(b, accepted, t);
  }
  bool verifiesDraftProbs(const exec::DeviceProbRows &rows) const override {
    return !hideDraftProbs && inner->verifiesDraftProbs(rows);
  }
  Status readDraftProbs(const exec::DeviceProbRows &rows, int64_t first,
                        int64_t count, float *out) const override {
    ++readProbRows;
    return inner->readDraftProbs(rows, first, count, out);
  }
  Expected<exec::DeviceProbRows> reserveDraftProbs(int64_t rows) override {
    return inner->reserveDraftProbs(rows);
  }

  std::unique_ptr<exec::Executor> inner;
  /// Says it cannot verify a draft's distributions kept on the device
  /// (hideDraftProbs), or anything there (hideVerifier, while it still
  /// reads such distributions).
  bool hideDraftProbs = false, hideVerifier = false;
  int logitsCalls = 0, verifiedCalls = 0, sampledCalls = 0;
  mutable int readProbRows = 0;
  int64_t verifiedSeqs = 0, verifiedLogprobRows = 0;
};

/// What serveCounted's engine wrote and asked of its executor.
struct CountedRun {
  std::map<std::string, std::vector<TokenId>> out;
  std::map<std::string, std::vector<TokenLogprobs>> logprobs;
  uint64_t proposed = 0;
  int logitsCalls = 0, verifiedCalls = 0, sampledCalls = 0;
  int64_t verifiedSeqs = 0, verifiedLogprobRows = 0;
};

/// Serves `requests` on `executor` (counted) to the end, with n-gram
/// speculation of 3 drafts where `ngram`.
CountedRun serveCounted(std::shared_ptr<const plan::Plan> plan,
                        std::unique_ptr<exec::Executor> executor, bool ngram,
                        const std::vector<NewRequest> &requests) {
  CountedRun run;
  core::SpeculativeConfig spec;
  if (ngram) {
    tools::SpeculativeFlags flags;
    flags.method = "ngram";
    flags.adaptive = false;
    EXPECT_TRUE(flags.finish());
    Expected<core::SpeculativeConfig> made =
        tools::makeSpeculativeConfig(flags, 3, nullptr, 4096, 96, 47 * 16);
    EXPECT_TRUE(bool(made)) << made.status().message();
    if (!made)
      return run;
    spec = std::move(*made);
  }
  auto wrapped = std::make_unique<CountingExecutor>(std::move(executor));
  CountingExecutor *counting = wrapped.get();
  auto engine =
      testEngine(std::move(plan), std::move(wrapped), std::move(spec), 96, 48);
  if (!engine)
    return run;
  for (const NewRequest &r : requests)
    EXPECT_TRUE(engine->addRequest(r));
  run.out = drain(*engine, &run.logprobs);
  run.proposed = engine->speculativeStats().numProposed;
  run.logitsCalls = counting->logitsCalls;
  run.sampledCalls = counting->sampledCalls;
  run.verifiedCalls = counting->verifiedCalls;
  run.verifiedSeqs = counting->verifiedSeqs;
  run.verifiedLogprobRows = counting->verifiedLogprobRows;
  return run;
}

/// Four seeded requests whose prompts repeat a phrase (so that the n-gram
/// lookup finds drafts): greedy, min-p, top-k and top-p.
std::vector<NewRequest> phraseRequests() {
  std::vector<NewRequest> requests;
  for (int i = 0; i < 4; ++i) {
    NewRequest r;
    r.requestId = "r" + std::to_string(i);
    std::vector<int32_t> phrase = tokens(5, 40 + i);
    for (int rep = 0; rep < 4; ++rep)
      r.promptTokenIds.insert(r.promptTokenIds.end(), phrase.begin(),
                              phrase.end());
    SamplingParams &sp = r.samplingParams;
    sp.temperature = i == 0 ? 0.0f : 0.6f + 0.2f * float(i);
    sp.topK = i == 2 ? 40 : 0;
    sp.topP = i == 3 ? 0.9f : 1.0f;
    sp.minP = i == 1 ? 0.05f : 0.0f;
    sp.seed = uint64_t(5 + i);
    sp.maxTokens = 24;
    sp.ignoreEos = true;
    requests.push_back(r);
  }
  return requests;
}

/// `p` without its kernels whose names hold `fragment` (as an older
/// folioc's plan).
std::shared_ptr<plan::Plan> withoutKernels(const plan::Plan &p,
                                           const std::string &fragment) {
  auto older = std::make_shared<plan::Plan>(p);
  auto &kernels = older->deviceKernels;
  kernels.erase(std::remove_if(kernels.begin(), kernels.end(),
                               [&](const plan::DeviceKernel &k) {
                                 return k.name.find(fragment) !=
                                        std::string::npos;
                               }),
                kernels.end());
  EXPECT_LT(kernels.size(), p.deviceKernels.size()) << fragment;
  return older;
}

// n-gram speculation of greedy and sampled requests (temperature, min-p,
// top-k, top-p) beside plain draws: the GPU verifies the drafts where the
// logits are, no step brings its logits back, and the tokens are those of
// the host path over the same GPU logits (a plan without the verifier, as
// an older folioc's); the greedy request's are the CPU engine's.
TEST(CudaExecutor, VerifiesNgramDraftsOnTheDevice) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  ASSERT_TRUE(cudaExecutor()); // registers the kernels
  CountedRun gpu = serveCounted(p, cudaExecutor(), true, phraseRequests());
  ASSERT_EQ(gpu.out.size(), 4u);
  EXPECT_EQ(gpu.out.at("r3").size(), 24u);
  EXPECT_GT(gpu.proposed, 20u);
  EXPECT_GT(gpu.verifiedCalls, 0);
  EXPECT_GE(gpu.verifiedSeqs, 8);
  EXPECT_EQ(gpu.logitsCalls, 0) << "no step brought its logits back";

  // The same GPU logits verified on the host: the same tokens.
  CountedRun host = serveCounted(withoutKernels(*p, "verify_drafts"),
                                 cudaExecutor(), true, phraseRequests());
  EXPECT_EQ(host.verifiedCalls, 0);
  EXPECT_GT(host.logitsCalls, 0);
  EXPECT_EQ(host.proposed, gpu.proposed);
  EXPECT_EQ(gpu.out, host.out);
  // The greedy request writes what the CPU engine writes.
  CountedRun cpu =
      serveCounted(p, exec::createCPUExecutor(), true, phraseRequests());
  EXPECT_EQ(cpu.verifiedCalls, 0);
  EXPECT_EQ(gpu.out.at("r0"), cpu.out.at("r0"));
}

/// Serves `requests` on the GPU with the bundled model drafting for
/// itself with int4 weights (3 drafts per step), both executors counted.
struct DraftRun {
  std::map<std::string, std::vector<TokenId>> out;
  std::map<std::string, std::vector<TokenLogprobs>> logprobs;
  uint64_t proposed = 0, accepted = 0;
  int targetLogits = 0, draftLogits = 0, verifiedCalls = 0, readProbRows = 0;
  bool keptOnDevice = false;
};
DraftRun serveWithDraft(std::shared_ptr<const plan::Plan> target,
                        const std::vector<NewRequest> &requests,
                        bool hideDraftProbs, bool hideVerifier) {
  DraftRun run;
  auto draftExec = std::make_unique<CountingExecutor>(cudaExecutor());
  CountingExecutor *draftCounts = draftExec.get();
  Expected<std::unique_ptr<spec::DraftProposer>> proposer =
      spec::DraftProposer::create(bundledPlan("sm_90a", "int4"),
                                  std::move(draftExec), 48, 4096, 96);
  EXPECT_TRUE(bool(proposer)) << proposer.status().message();
  if (!proposer)
    return run;
  spec::DraftProposer *draft = proposer->get();
  core::SpeculativeConfig spec;
  spec.proposer = std::move(*proposer);
  spec.numSpeculativeTokens = 3;
  spec.adaptive = false;
  auto wrapped = std::make_unique<CountingExecutor>(cudaExecutor());
  wrapped->hideDraftProbs = hideDraftProbs;
  wrapped->hideVerifier = hideVerifier;
  CountingExecutor *counting = wrapped.get();
  auto engine = testEngine(std::move(target), std::move(wrapped),
                           std::move(spec), 96, 48);
  if (!engine)
    return run;
  run.keptOnDevice = draft->deviceProbs().address != 0;
  for (const NewRequest &r : requests)
    EXPECT_TRUE(engine->addRequest(r));
  run.out = drain(*engine, &run.logprobs);
  run.proposed = engine->speculativeStats().numProposed;
  run.accepted = engine->speculativeStats().numAccepted;
  run.targetLogits = counting->logitsCalls;
  run.verifiedCalls = counting->verifiedCalls;
  run.readProbRows = counting->readProbRows;
  run.draftLogits = draftCounts->logitsCalls;
  return run;
}

// A draft model on the GPU keeps the distributions it drew its drafts from
// there, and the target's verifier reads them where they are: sampled
// requests (top-k with logprobs, top-p with a frequency penalty, min-p
// with a repetition penalty) beside a greedy one, with the bundled model
// in int4 drafting for itself in bf16 (so some drafts are rejected). No
// step of either model brings logits back, and the tokens and logprobs
// are the host path's: the same GPU logits, the distributions processed
// and verified on the host (a target that says it cannot read them). A
// target that reads them but cannot verify a step on the device copies
// them over and verifies on the host, to the same tokens.
TEST(CudaExecutor, VerifiesDraftModelDistributionsOnTheDevice) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  ASSERT_TRUE(cudaExecutor()); // registers the kernels
  std::vector<NewRequest> requests = phraseRequests();
  requests[1].samplingParams.logprobs = 2;
  requests[2].samplingParams.frequencyPenalty = 0.3f;
  requests[3].samplingParams.repetitionPenalty = 1.1f;
  for (NewRequest &r : requests)
    r.samplingParams.maxTokens = 16;
  DraftRun gpu = serveWithDraft(p, requests, false, false);
  ASSERT_EQ(gpu.out.size(), 4u);
  EXPECT_TRUE(gpu.keptOnDevice);
  EXPECT_GT(gpu.proposed, 20u);
  EXPECT_LT(gpu.accepted, gpu.proposed) << "some drafts rejected";
  EXPECT_GT(gpu.accepted, 0u);
  EXPECT_GT(gpu.verifiedCalls, 0);
  EXPECT_EQ(gpu.targetLogits, 0) << "no target step brought its logits back";
  EXPECT_EQ(gpu.draftLogits, 0) << "no draft step brought its logits back";
  EXPECT_EQ(gpu.readProbRows, 0);

  DraftRun host = serveWithDraft(p, requests, true, false);
  EXPECT_FALSE(host.keptOnDevice);
  EXPECT_GT(host.targetLogits, 0);
  EXPECT_GT(host.draftLogits, 0);
  EXPECT_EQ(host.proposed, gpu.proposed);
  EXPECT_EQ(host.accepted, gpu.accepted);
  EXPECT_EQ(gpu.out, host.out);
  ASSERT_EQ(gpu.logprobs.at("r1").size(), host.logprobs.at("r1").size());
  for (size_t i = 0; i < gpu.logprobs.at("r1").size(); ++i) {
    const TokenLogprobs &g = gpu.logprobs.at("r1")[i],
                        &h = host.logprobs.at("r1")[i];
    EXPECT_NEAR(g.logprob, h.logprob, 1e-4) << "token " << i;
    ASSERT_EQ(g.top.size(), h.top.size());
    for (size_t j = 0; j < g.top.size(); ++j)
      EXPECT_EQ(g.top[j].first, h.top[j].first) << "token " << i;
  }

  DraftRun copied = serveWithDraft(p, requests, false, true);
  EXPECT_TRUE(copied.keptOnDevice);
  EXPECT_EQ(copied.verifiedCalls, 0);
  EXPECT_GT(copied.readProbRows, 0);
  EXPECT_EQ(copied.out, host.out);
}

// Repetition, frequency and presence penalties are applied where the
// logits are, for greedy and sampled requests: no step brings its logits
// back, and the tokens are the host sampler's over the same GPU logits (a
// plan without the penalties kernel, as an older folioc's).
TEST(CudaExecutor, AppliesPenaltiesOnTheDevice) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  ASSERT_TRUE(cudaExecutor()); // registers the kernels
  std::vector<NewRequest> requests = phraseRequests();
  requests[0].samplingParams.repetitionPenalty = 1.5f;
  requests[1].samplingParams.frequencyPenalty = 0.7f;
  requests[2].samplingParams.presencePenalty = 1.2f;
  requests[2].samplingParams.repetitionPenalty = 0.9f;
  CountedRun gpu = serveCounted(p, cudaExecutor(), false, requests);
  EXPECT_EQ(gpu.logitsCalls, 0);
  CountedRun host = serveCounted(withoutKernels(*p, "penalize"), cudaExecutor(),
                                 false, requests);
  EXPECT_GT(host.logitsCalls, 0);
  ASSERT_EQ(gpu.out.size(), 4u);
  EXPECT_EQ(gpu.out, host.out);
  // The penalties change what the requests write.
  CountedRun plain = serveCounted(p, cudaExecutor(), false, phraseRequests());
  EXPECT_NE(plain.out.at("r0"), gpu.out.at("r0"));
  EXPECT_NE(plain.out.at("r1"), gpu.out.at("r1"));
  EXPECT_NE(plain.out.at("r2"), gpu.out.at("r2"));
  EXPECT_EQ(plain.out.at("r3"), gpu.out.at("r3"));

  // With n-gram speculation the drafts verified on the device are
  // penalized row by row, each with the drafts before it as history: the
  // tokens are the host path's. Mild penalties, so that the requests
  // still repeat themselves and the lookup finds some drafts
  // (VerifiesPenalizedDraftsOnTheDevice checks the rows themselves).
  requests = phraseRequests();
  requests[0].samplingParams.repetitionPenalty = 1.05f;
  requests[1].samplingParams.frequencyPenalty = 0.2f;
  requests[2].samplingParams.presencePenalty = 0.1f;
  requests[3].samplingParams.frequencyPenalty = 0.1f;
  for (NewRequest &r : requests)
    r.samplingParams.maxTokens = 16;
  gpu = serveCounted(p, cudaExecutor(), true, requests);
  EXPECT_GT(gpu.verifiedCalls, 0);
  EXPECT_EQ(gpu.logitsCalls, 0);
  host = serveCounted(withoutKernels(*p, "penalize"), cudaExecutor(), true,
                      requests);
  EXPECT_EQ(host.verifiedCalls, 0);
  EXPECT_GT(host.proposed, 0u);
  EXPECT_EQ(gpu.proposed, host.proposed);
  EXPECT_EQ(gpu.out, host.out);
}

// Drafts verified on the device with penalties: each row is penalized with
// the output and the drafts before it as history, as the engine's host
// path penalizes it, against that path over the same GPU logits. In the
// greedy sequences token `a` (row 1's argmax) is made row 0's by an output
// holding every token above it there; a presence or frequency penalty
// then keeps it at row 0 and, with `a` as the first draft in row 1's
// history, rejects it there as the second draft. The sampled sequences
// (low and high temperature, top-k) repeat their first draft and an
// output token.
TEST(CudaExecutor, VerifiesPenalizedDraftsOnTheDevice) {
  std::unique_ptr<exec::Executor> gpu =
      loadedGpu(bundledPlan("sm_90a", "bf16"), 16);
  ASSERT_TRUE(gpu);
  Sequences seqs;
  const int K = 3, S = 4;
  std::vector<int> ids;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < S; ++i) {
    ids.push_back(seqs.add());
    prompts.push_back(tokens(6, 11 + i));
  }
  // Each sequence's last K + 1 tokens are its drafts' rows.
  exec::ForwardBatch b = seqs.step(ids, prompts);
  b.logitsIndices.clear();
  for (int i = 0; i < S; ++i)
    for (int j = 0; j <= K; ++j)
      b.logitsIndices.push_back(6 * i + 2 + j);
  std::vector<float> logits;
  int64_t vocab = 0;
  ASSERT_TRUE(gpu->forward(b, logits, vocab));
  auto row = [&](int i, int j) {
    return logits.data() + size_t(i * (K + 1) + j) * size_t(vocab);
  };

  std::vector<SamplingParams> params(S);
  params[0].temperature = 0.0f;
  params[0].presencePenalty = 50.0f;
  params[0].repetitionPenalty = 1.2f;
  params[1].temperature = 0.0f;
  params[1].frequencyPenalty = 50.0f;
  params[2].temperature = 0.3f;
  params[2].frequencyPenalty = 2.5f;
  params[2].presencePenalty = 0.5f;
  params[3].temperature = 1.1f;
  params[3].topK = 40;
  params[3].frequencyPenalty = 1.5f;
  std::vector<std::vector<TokenId>> prompt(S), output(S), drafts(S);
  std::vector<core::SpecSequence> specs(S);
  exec::DeviceVerify v;
  v.numSeqs = S;
  v.numDraft = K;
  v.drafts.assign(size_t(S * K), -1);
  v.uniforms.resize(size_t(S * (K + 1)));
  v.rowPenaltyTokens.resize(size_t(S * (K + 1)));
  v.rowPenaltyCounts.resize(size_t(S * (K + 1)));
  for (int i = 0; i < S; ++i) {
    prompt[i].assign(prompts[i].begin(), prompts[i].begin() + 3);
    if (i < 2) {
      const TokenId a = firstMaximum(row(i, 1), size_t(vocab));
      for (int64_t t = 0; t < vocab; ++t)
        if (t != a && row(i, 0)[t] >= row(i, 0)[a])
          output[i].push_back(TokenId(t));
      drafts[i] = {a, a, a};
    } else {
      output[i].assign(prompts[i].begin() + 3, prompts[i].end());
      TokenId first = firstMaximum(row(i, 0), size_t(vocab));
      drafts[i] = {first, first, output[i][0]};
    }
    core::SpecSequence &s = specs[size_t(i)];
    s.prompt = &prompt[i];
    s.output = &output[i];
    s.drafts = &drafts[i];
    s.params = &params[i];
    s.seed = 40 + uint64_t(i);
    s.position = 6;
    exec::DeviceDraw d;
    d.temperature = params[i].temperature;
    d.topK = params[i].topK;
    d.repetitionPenalty = params[i].repetitionPenalty;
    d.frequencyPenalty = params[i].frequencyPenalty;
    d.presencePenalty = params[i].presencePenalty;
    v.params.push_back(d);
    std::copy(drafts[i].begin(), drafts[i].end(), v.drafts.begin() + i * K);
    core::verifyUniforms(s, K, v.uniforms.data() + i * (K + 1));
    // Row j's list: the output and drafts 0..j-1 counted, the prompt's
    // tokens at 0 where the repetition penalty reads them.
    for (int j = 0; j <= K; ++j) {
      std::map<int32_t, int32_t> count;
      for (TokenId t : output[i])
        ++count[t];
      for (int d2 = 0; d2 < j; ++d2)
        ++count[drafts[i][size_t(d2)]];
      if (params[i].repetitionPenalty != 1.0f)
        for (TokenId t : prompt[i])
          count.emplace(t, 0);
      for (const auto &[t, n] : count) {
        v.rowPenaltyTokens[size_t(i * (K + 1) + j)].push_back(t);
        v.rowPenaltyCounts[size_t(i * (K + 1) + j)].push_back(n);
      }
    }
  }
  std::vector<core::SpecOutcome> want;
  std::vector<float> host = logits;
  ASSERT_TRUE(core::verifySpeculativeOnCpu(host.data(), K, vocab, specs, want));
  // The greedy sequences keep `a` at row 0 only, as the penalties decide.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(want[size_t(i)].numAccepted, 1u) << i;
    ASSERT_EQ(want[size_t(i)].tokens.size(), 2u) << i;
    EXPECT_NE(want[size_t(i)].tokens[1], drafts[i][1]) << i;
  }

  std::vector<int32_t> accepted, out;
  std::vector<exec::DeviceLogprobs> lp;
  int64_t gotVocab = 0;
  Status st = gpu->forwardVerified(b, v, {}, accepted, out, lp, gotVocab);
  ASSERT_TRUE(bool(st)) << st.message();
  std::vector<core::SpecOutcome> got;
  ASSERT_TRUE(core::verifiedOnDevice(accepted.data(), out.data(), K, gotVocab,
                                     specs, got));
  for (int i = 0; i < S; ++i) {
    EXPECT_EQ(got[size_t(i)].numAccepted, want[size_t(i)].numAccepted) << i;
    EXPECT_EQ(got[size_t(i)].tokens, want[size_t(i)].tokens) << i;
  }
}
/// Expects `gpu`'s tokens to be `host`'s and its logprobs the host's within
/// the rounding of the device's sums (and of a penalised row, stored as
/// float where the host keeps double); `requests` say who asked for how
/// many, each for `numTokens` tokens.
void expectLogprobsOfHost(const CountedRun &gpu, const CountedRun &host,
                          const std::vector<NewRequest> &requests,
                          size_t numTokens) {
  ASSERT_EQ(gpu.out.size(), requests.size());
  EXPECT_EQ(gpu.out, host.out);
  for (const NewRequest &r : requests) {
    SCOPED_TRACE(r.requestId);
    const auto &have = gpu.logprobs.at(r.requestId),
               &want = host.logprobs.at(r.requestId);
    ASSERT_EQ(have.size(), want.size());
    if (!r.samplingParams.logprobs) {
      EXPECT_TRUE(have.empty());
      continue;
    }
    ASSERT_EQ(have.size(), numTokens);
    for (size_t t = 0; t < want.size(); ++t) {
      EXPECT_NEAR(have[t].logprob, want[t].logprob, 1e-5) << "token " << t;
      ASSERT_EQ(have[t].top.size(), size_t(*r.samplingParams.logprobs));
      ASSERT_EQ(want[t].top.size(), have[t].top.size());
      for (size_t j = 0; j < want[t].top.size(); ++j) {
        EXPECT_EQ(have[t].top[j].first, want[t].top[j].first)
            << "token " << t << ", top " << j;
        EXPECT_NEAR(have[t].top[j].second, want[t].top[j].second, 1e-5)
            << "token " << t << ", top " << j;
      }
    }
  }
}

// Logprobs are reported from where the logits are, for greedy and sampled
// requests (with a penalty too) beside one that asks for none, and with
// n-gram speculation verified there: no step brings its logits back, and
// the tokens and logprobs are the host path's over the same GPU logits (a
// plan without the logprobs kernel, as an older folioc's).
TEST(CudaExecutor, ReportsLogprobsFromTheDevice) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  ASSERT_TRUE(cudaExecutor()); // registers the kernels
  std::shared_ptr<plan::Plan> older = withoutKernels(*p, "logprobs");
  std::vector<NewRequest> requests = phraseRequests();
  requests[0].samplingParams.logprobs = 5;
  requests[1].samplingParams.logprobs = 0;
  requests[2].samplingParams.logprobs = 20;
  requests[2].samplingParams.frequencyPenalty = 0.4f;
  for (NewRequest &r : requests)
    r.samplingParams.maxTokens = 12;
  CountedRun gpu = serveCounted(p, cudaExecutor(), false, requests);
  EXPECT_EQ(gpu.logitsCalls, 0) << "no step brought its logits back";
  EXPECT_GT(gpu.sampledCalls, 0);
  CountedRun host = serveCounted(older, cudaExecutor(), false, requests);
  EXPECT_GT(host.logitsCalls, 0);
  expectLogprobsOfHost(gpu, host, requests, 12);

  // A request whose prompt repeats nothing asks for logprobs beside
  // requests the n-gram lookup speculates for, a greedy and a top-p one
  // asking too: the steps verify drafts where the logits are and report
  // every row's logprobs, each emitted token's under its row.
  requests = phraseRequests();
  requests[0].samplingParams.logprobs = 3;
  requests[3].samplingParams.logprobs = 2;
  NewRequest plain;
  plain.requestId = "plain";
  plain.promptTokenIds = {101, 202, 303, 404, 505, 606};
  plain.samplingParams.temperature = 0.9f;
  plain.samplingParams.topK = 50;
  plain.samplingParams.seed = 3;
  plain.samplingParams.logprobs = 4;
  plain.samplingParams.ignoreEos = true;
  requests.push_back(plain);
  for (NewRequest &r : requests)
    r.samplingParams.maxTokens = 16;
  gpu = serveCounted(p, cudaExecutor(), true, requests);
  EXPECT_GT(gpu.verifiedLogprobRows, 0);
  EXPECT_GT(gpu.verifiedCalls, 0);
  EXPECT_EQ(gpu.logitsCalls, 0);
  host = serveCounted(older, cudaExecutor(), true, requests);
  EXPECT_EQ(host.verifiedCalls, 0);
  expectLogprobsOfHost(gpu, host, requests, 16);
}

// The samplers run where the logits are: forwardGreedy's tokens are the
// argmax of forward's rows (the lowest index among the largest), and
// forwardSampled's are runtime/Sampler's draws from them, for a prefill
// and for decode steps padded and replayed as a graph; an engine serving
// greedy or seeded top-k / top-p requests through them writes what the
// CPU's writes. A plan without them (an older folioc's) is refused.
TEST(CudaExecutor, TakesTokensOnTheDevice) {
  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(p);
  std::unique_ptr<exec::Executor> gpu = loadedGpu(p, 16);
  ASSERT_TRUE(gpu);
  EXPECT_TRUE(gpu->greedyOnDevice());
  EXPECT_TRUE(gpu->samplesOnDevice());
  std::vector<int32_t> ids;
  std::vector<exec::DeviceLogprobs> lp;
  int64_t vocab = 0;
  Sequences seqs;
  int a = seqs.add(), b = seqs.add(), c = seqs.add();
  std::vector<exec::ForwardBatch> steps = {
      seqs.step({a, b, c}, {tokens(3, 1), tokens(17, 2), tokens(5, 3)})};
  for (int i = 0; i < 2; ++i)
    steps.push_back(seqs.step(
        {a, b, c}, {tokens(1, 4 + i), tokens(1, 6 + i), tokens(1, 8 + i)}));
  for (const exec::ForwardBatch &step : steps) {
    std::vector<float> logits;
    int64_t greedyVocab = 0;
    // The same step twice: it writes the same KV both times.
    ASSERT_TRUE(gpu->forward(step, logits, vocab));
    Status s = gpu->forwardGreedy(step, ids, greedyVocab);
    ASSERT_TRUE(bool(s)) << s.message();
    EXPECT_EQ(greedyVocab, vocab);
    ASSERT_EQ(ids.size(), step.logitsIndices.size());
    for (size_t r = 0; r < ids.size(); ++r) {
      auto row = logits.begin() + std::ptrdiff_t(r * size_t(vocab));
      EXPECT_EQ(ids[r], std::max_element(row, row + vocab) - row)
          << "row " << r;
    }
    // Row 1 is greedy beside draws with top-k, top-p and min-p.
    std::vector<exec::DeviceDraw> draws;
    for (size_t r = 0; r < ids.size(); ++r)
      draws.push_back({r == 1 ? 0.0f : 0.7f + 0.2f * float(r),
                       int32_t(r == 2 ? 5 : 0), r == 2 ? 0.8f : 1.0f,
                       r == 0 ? 0.02f : 0.0f, 0.1 + 0.3 * double(r)});
    ASSERT_TRUE(gpu->forwardSampled(step, draws, ids, lp, greedyVocab));
    ASSERT_EQ(ids.size(), draws.size());
    for (size_t r = 0; r < ids.size(); ++r) {
      SamplingParams params;
      params.temperature = draws[r].temperature;
      params.topK = draws[r].topK;
      params.topP = draws[r].topP;
      params.minP = draws[r].minP;
      const float *row = logits.data() + r * size_t(vocab);
      Expected<TokenId> want =
          params.isGreedy()
              ? Expected<TokenId>(firstMaximum(row, size_t(vocab)))
              : drawWithUniform(row, size_t(vocab), params, draws[r].uniform);
      ASSERT_TRUE(bool(want));
      EXPECT_EQ(ids[r], *want) << "row " << r;
    }
  }
  EXPECT_EQ(serveOnGpu(p, {}), serveOnGpu(p, {}, nullptr, /*onCpu=*/true));
  EXPECT_EQ(serveOnGpu(p, {}, nullptr, false, 0.8f),
            serveOnGpu(p, {}, nullptr, /*onCpu=*/true, 0.8f));
  EXPECT_EQ(serveOnGpu(p, {}, nullptr, false, 0.8f, /*mixed=*/true),
            serveOnGpu(p, {}, nullptr, /*onCpu=*/true, 0.8f, true));
  std::vector<exec::DeviceDraw> bad(steps[0].logitsIndices.size());
  bad[1].uniform = 1.0;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 1: temperature");
  bad[1].uniform = 0.5;
  bad[2].minP = 1.5f;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 2: temperature 1.000000, top_p 1.000000, min_p 1.5");
  bad[2].minP = 0.0f;
  bad[0].frequencyPenalty = 0.5f;
  bad[0].penaltyTokens = {7, 4096};
  bad[0].penaltyCounts = {1, 2};
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 0: penalty token 4096 (count 2) is outside the "
                "vocabulary of 4096");
  bad[0].penaltyCounts = {1};
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 0: 2 penalty tokens but 1 counts");
  bad[0].penaltyTokens = {7};
  bad[0].repetitionPenalty = 0.0f;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 0: repetition penalty 0.000000, frequency 0.500000");
  bad[0] = exec::DeviceDraw();
  bad[2].logprobs = 21;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 2: 21 top logprobs; the device reports 0 to 20");
  bad[2].logprobs = -1;
  // A draft's distribution rows: only within what reserveDraftProbs
  // reserved, and only for sampled draws.
  expectRefused(gpu->reserveDraftProbs(0).status(),
                "0 rows of draft distributions of 4096 tokens: want 1 to");
  expectRefused(exec::createCPUExecutor()->reserveDraftProbs(2).status(),
                "keeps no draft distributions where its logits are");
  Expected<exec::DeviceProbRows> qRows = gpu->reserveDraftProbs(2);
  ASSERT_TRUE(bool(qRows)) << qRows.status().message();
  EXPECT_EQ(qRows->vocab, 4096);
  EXPECT_TRUE(gpu->verifiesDraftProbs(*qRows));
  bad[1].probsRow = 2;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 1: distribution row 2 is outside the 2 rows "
                "reserveDraftProbs reserved");
  bad[1].probsRow = 1;
  bad[1].temperature = 0.0f;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "draw 1: distribution row 1 for a greedy draw");
  bad[1] = exec::DeviceDraw();
  exec::DeviceProbRows elsewhere = *qRows;
  elsewhere.owner = &elsewhere; // another device's context
  EXPECT_FALSE(gpu->verifiesDraftProbs(elsewhere));
  std::vector<float> q(4096);
  expectRefused(gpu->readDraftProbs(elsewhere, 0, 1, q.data()),
                "not on this executor's device");
  expectRefused(gpu->readDraftProbs(*qRows, 1, 2, q.data()),
                "rows [1, +2) are outside the 2 reserved");
  EXPECT_FALSE(exec::createCPUExecutor()->verifiesDraftProbs(*qRows));

  // Verifications the verifier cannot take are refused before anything
  // runs: one sequence of 2 drafts takes the step's 3 rows.
  std::vector<int32_t> accepted;
  auto refusedVerify = [&](auto edit, const std::string &fragment) {
    exec::DeviceVerify v;
    v.numSeqs = 1;
    v.numDraft = 2;
    v.params.resize(1);
    v.drafts = {5, 6};
    v.uniforms = {0.1f, 0.2f, 0.3f};
    edit(v);
    expectRefused(
        gpu->forwardVerified(steps[0], v, {}, accepted, ids, lp, vocab),
        fragment);
  };
  refusedVerify([](exec::DeviceVerify &v) { v.drafts[1] = 4096; },
                "verified sequence 0, draft 1: token 4096 is outside the "
                "vocabulary of 4096");
  refusedVerify(
      [](exec::DeviceVerify &v) {
        v.drafts = {-1, 3};
      },
      "draft 1: token 3 follows -1 padding");
  refusedVerify([](exec::DeviceVerify &v) { v.uniforms[2] = 1.0f; },
                "verified sequence 0, uniform 2 is 1.000000");
  refusedVerify([](exec::DeviceVerify &v) { v.params[0].topP = 0.0f; },
                "verified sequence 0: temperature 1.000000, top_p 0.000000");
  refusedVerify(
      [](exec::DeviceVerify &v) { v.params[0].presencePenalty = 0.5f; },
      "drafts with penalties has 0 and 0 row penalty lists (want 3 each");
  refusedVerify(
      [](exec::DeviceVerify &v) {
        v.params[0].presencePenalty = 0.5f;
        v.rowPenaltyTokens = {{}, {5}, {5, 4096}};
        v.rowPenaltyCounts = {{}, {1}, {1, 1}};
      },
      "verified sequence 0, row 2: penalty token 4096 (count 1) is outside");
  refusedVerify(
      [&](exec::DeviceVerify &v) {
        v.draftProbs = *qRows;
        v.probRows = {1}; // 2 drafts from row 1 of 2
      },
      "verified sequence 0: draft distribution rows from 1 for 2 drafts, "
      "past the 2 rows reserved");
  refusedVerify(
      [&](exec::DeviceVerify &v) {
        v.draftProbs = elsewhere;
        v.probRows = {0};
      },
      "the draft distributions to verify against are not on this "
      "executor's device");
  refusedVerify(
      [&](exec::DeviceVerify &v) {
        v.draftProbs = *qRows;
        v.probRows = {0};
        v.params[0].temperature = 0.0f;
      },
      "verified sequence 0: draft distribution rows from 0 for a greedy "
      "sequence");
  refusedVerify(
      [&](exec::DeviceVerify &v) {
        v.draftProbs = *qRows;
        v.probRows = {0, 0};
      },
      "verification of 1 sequences has 2 draft distribution rows");
  refusedVerify([](exec::DeviceVerify &v) { v.uniforms.pop_back(); },
                "has 1 parameter sets, 2 drafts and 2 uniforms (want 1, 2 "
                "and 3)");
  refusedVerify(
      [](exec::DeviceVerify &v) {
        v.numSeqs = 2;
        v.params.resize(2);
        v.drafts = {5, 6, 7, 8};
        v.uniforms.resize(6, 0.5f);
      },
      "needs 6 logits rows; the batch has 3");
  refusedVerify(
      [](exec::DeviceVerify &v) {
        v.numDraft = 1; // 2 rows: the third needs a draw
        v.drafts = {5};
        v.uniforms = {0.1f, 0.2f};
      },
      "0 draws for 1 logits rows");
  {
    std::shared_ptr<plan::Plan> noLogprobs = withoutKernels(*p, "logprobs");
    std::unique_ptr<exec::Executor> partial = loadedGpu(noLogprobs, 16);
    ASSERT_TRUE(partial);
    EXPECT_TRUE(partial->samplesOnDevice());
    EXPECT_FALSE(partial->logprobsOnDevice());
    std::vector<exec::DeviceDraw> draws(steps[0].logitsIndices.size());
    draws[0].logprobs = 1;
    expectRefused(partial->forwardSampled(steps[0], draws, ids, lp, vocab),
                  "embeds no logprobs kernel");
  }
  EXPECT_TRUE(gpu->logprobsOnDevice());

  auto older = std::make_shared<plan::Plan>(*p);
  older->deviceKernels.erase(
      std::remove_if(older->deviceKernels.begin(), older->deviceKernels.end(),
                     [](const plan::DeviceKernel &k) {
                       return k.name.rfind("folio_sample_", 0) == 0;
                     }),
      older->deviceKernels.end());
  ASSERT_LT(older->deviceKernels.size(), p->deviceKernels.size());
  gpu = loadedGpu(older, 16);
  ASSERT_TRUE(gpu);
  EXPECT_FALSE(gpu->greedyOnDevice());
  EXPECT_FALSE(gpu->samplesOnDevice());
  expectRefused(gpu->forwardGreedy(steps[0], ids, vocab),
                "embeds no greedy sampler");
  bad[1].uniform = 0.5;
  expectRefused(gpu->forwardSampled(steps[0], bad, ids, lp, vocab),
                "embeds no top-k / top-p sampler");
  EXPECT_FALSE(gpu->verifiesOnDevice());
  exec::DeviceVerify one;
  one.numSeqs = 1;
  one.numDraft = 2;
  one.params.resize(1);
  one.drafts = {5, 6};
  one.uniforms = {0.1f, 0.2f, 0.3f};
  expectRefused(
      gpu->forwardVerified(steps[0], one, {}, accepted, ids, lp, vocab),
      "embeds no verifier of drafts");

  // A kernel of the same name generated from other templates may read
  // another argument structure: the plan is refused before anything runs.
  auto otherTemplates = std::make_shared<plan::Plan>(*p);
  plan::DeviceKernel &k = otherTemplates->deviceKernels.back();
  size_t at = k.key.rfind("templates=");
  ASSERT_NE(at, std::string::npos) << k.key;
  k.key = k.key.substr(0, at) + "templates=0123456789abcdef";
  gpu = cudaExecutor({});
  ASSERT_TRUE(gpu);
  expectRefused(gpu->load(otherTemplates),
                "kernel " + k.name +
                    " was generated from other kernel templates than this "
                    "runtime's (its key ends 'templates=0123456789abcdef'");
  k.key = k.name; // no hash at all
  expectRefused(gpu->load(otherTemplates), "recompile the plan with this "
                                           "folioc (folioc --target=sm_");
}

// A model's own cos/sin table (GPT-NeoX's) is read by position: the
// kernel has no bound, so a position past the table is refused on the host.
TEST(CudaExecutor, RefusesPositionsPastTheModelsRotaryTable) {
  std::unique_ptr<exec::Executor> gpu =
      loadedGpu(gpuPlan(std::string(FOLIO_SOURCE_DIR) +
                            "/models/zoo/gpt_neox/cached.onnx",
                        "sm_90a", "bf16"),
                8);
  ASSERT_TRUE(gpu);
  Sequences seqs;
  exec::ForwardBatch b = seqs.step({seqs.add()}, {tokens(2, 1)});
  for (int32_t &t : b.tokens)
    t %= 100; // the fixture's vocabulary
  std::vector<float> logits;
  int64_t vocab = 0;
  Status s = gpu->forward(b, logits, vocab);
  ASSERT_TRUE(bool(s)) << s.message();
  b.positions[1] = 128;
  s = gpu->forward(b, logits, vocab);
  expectRefused(s, "position 128 is past the model's cos/sin "
                   "table of 128 positions");
}

TEST(CudaExecutor, RefusesWhatItCannotRun) {
  std::unique_ptr<exec::Executor> gpu = cudaExecutor();
  ASSERT_TRUE(gpu);
  // A plan compiled for the CPU has no kernels for the device.
  Status s = gpu->load(bundledPlan("cpu", "bf16"));
  expectRefused(s, "folioc --target=");
  // Weights left as f32 constants: no generated GEMM reads them.
  s = gpu->load(bundledPlan("sm_90a", "none", "auto", /*embed=*/false));
  expectRefused(s, "no CUDA generator covers linear");
  EXPECT_NE(s.message().find("--device cpu"), std::string::npos) << s.message();

  std::shared_ptr<plan::Plan> p = bundledPlan("sm_90a", "bf16");
  ASSERT_TRUE(gpu->load(p));
  Sequences seqs;
  int a = seqs.add();
  exec::ForwardBatch b = seqs.step({a}, {tokens(3, 1)});
  std::vector<float> logits;
  int64_t vocab = 0;
  s = gpu->forward(b, logits, vocab);
  expectRefused(s, "allocateKVCache");
  ASSERT_TRUE(gpu->allocateKVCache(8));
  b.tokens[1] = 4096; // the vocabulary is 4096 tokens
  s = gpu->forward(b, logits, vocab);
  expectRefused(s, "outside its table");
  b.tokens[1] = 17;
  // Indices into the cache are checked on the host: a kernel writing
  // outside the pools would corrupt device memory, not fail.
  exec::ForwardBatch bad = b;
  bad.slotMapping[2] = 8 * 16;
  s = gpu->forward(bad, logits, vocab);
  expectRefused(s, "slot 128 of token 2 is outside the KV cache's "
                   "[0, 128)");
  bad = b;
  bad.slotMapping[2] = bad.slotMapping[1];
  EXPECT_FALSE(bool(gpu->forward(bad, logits, vocab)));
  bad = b;
  bad.blockTables[0] = 8;
  s = gpu->forward(bad, logits, vocab);
  expectRefused(s, "block table entry 0 = 8 is outside [0, 8)");
  bad = b;
  bad.seqLens[0] = 2;
  EXPECT_FALSE(bool(gpu->forward(bad, logits, vocab)));
  // A good batch after the bad ones.
  s = gpu->forward(b, logits, vocab);
  ASSERT_TRUE(bool(s)) << s.message();
  EXPECT_EQ(vocab, 4096);
  EXPECT_EQ(logits.size(), size_t(vocab));

  // A decode step runs as a graph, padded to a bucket (3 -> 4): the same
  // checks, naming the step's own rows.
  int c = seqs.add(), d = seqs.add();
  ASSERT_TRUE(gpu->forward(seqs.step({c, d}, {tokens(2, 3), tokens(2, 4)}),
                           logits, vocab));
  exec::ForwardBatch decode = seqs.step({a, c, d}, {{5}, {6}, {4096}});
  s = gpu->forward(decode, logits, vocab);
  expectRefused(s, "row 2 of an embedding or logits gather");
  decode.tokens[2] = 7;
  bad = decode;
  bad.blockTables[size_t(bad.maxBlocks)] = 8;
  s = gpu->forward(bad, logits, vocab);
  expectRefused(s, "sequence 1: block table entry 0 = 8 is outside [0, 8)");
  bad = decode;
  bad.seqLens[1] = int32_t(bad.maxBlocks * 16 + 1);
  s = gpu->forward(bad, logits, vocab);
  expectRefused(s, "sequence 1: seq_len");
  s = gpu->forward(decode, logits, vocab);
  ASSERT_TRUE(bool(s)) << s.message();
  EXPECT_EQ(logits.size(), size_t(3 * vocab));
}

} // namespace
} // namespace folio::cuda::test
