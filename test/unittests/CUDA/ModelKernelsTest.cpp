//===- ModelKernelsTest.cpp - Every model kernel through NVRTC ------------===//
//
// Compiles the bundled model and one export of every zoo architecture
// (models/zoo, models/zoo-hf) to plans for sm_90a and sm_80 (bf16 weights,
// and the bundled model with every other weight dtype), collects the
// CUDA kernels folioc --emit=cuda writes for them, and compiles them with
// NVRTC. The two targets give the two default cache types (fp8 on sm_89 /
// sm_90a, int8 on sm_80 / sm_86), so the kernel sets are those of all four
// archs. To keep this to seconds: kernels are deduplicated by key across
// models, each set is compiled as one translation unit (the sources are
// include-guarded), in full for sm_80 and sm_90a, and for sm_86 and sm_89
// with one kernel per structure (KernelStructure.h: the same code with
// other constants, which the spec checks bound).
//
//===----------------------------------------------------------------------===//

#include "test/unittests/CUDA/ModelKernels.h"
#include "codegen/CUDA/NVRTC/Nvrtc.h"
#include "compiler/Plan/CudaKernels.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Device/PlanLaunches.h"
#include "test/unittests/CUDA/KernelStructure.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <set>

namespace folio::cuda::test {
namespace {

/// Kernel sources by name for `target` (ModelKernels.h); `keys` gets each
/// kernel's canonical key.
std::map<std::string, std::string>
sourcesFor(const std::string &target,
           std::map<std::string, std::string> &keys) {
  std::vector<std::string> errors;
  std::map<std::string, std::string> out;
  for (const auto &[name, k] : modelKernels(FOLIO_SOURCE_DIR, target, errors)) {
    out[name] = k.kernel.source;
    keys[name] = k.kernel.key;
  }
  for (const std::string &e : errors)
    ADD_FAILURE() << e;
  return out;
}

/// One kernel per structure (KernelStructure.h), keyed by name.
std::map<std::string, std::string>
perStructure(const std::map<std::string, std::string> &kernels,
             const std::map<std::string, std::string> &keys) {
  std::map<std::string, std::string> out;
  std::set<std::string> seen;
  for (const auto &[name, source] : kernels)
    if (seen.insert(kernelStructure(keys.at(name))).second)
      out[name] = source;
  return out;
}

void compileAll(const std::map<std::string, std::string> &kernels,
                const std::string &arch) {
  std::string source;
  for (const auto &[name, text] : kernels)
    source += text;
  CompiledKernel c;
  cpu::Status st = compileWithNvrtc("folio_model_kernels", source, arch, c);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const auto &[name, text] : kernels)
    EXPECT_NE(c.ptx.find(".entry " + name + "("), std::string::npos)
        << name << " for " << arch;
}

TEST(CudaModelKernels, EveryModelKernelCompilesForEveryArch) {
  if (!nvrtcAvailable())
    GTEST_SKIP() << "this build has no CUDA toolkit (FOLIO_ENABLE_CUDA=OFF)";
  auto start = std::chrono::steady_clock::now();
  std::map<std::string, std::string> keys;
  std::map<std::string, std::string> fp8 = sourcesFor("sm_90a", keys);
  std::map<std::string, std::string> int8 = sourcesFor("sm_80", keys);
  auto compiled = std::chrono::steady_clock::now();
  ASSERT_FALSE(HasFailure());
  // Every model has attention, norms and the sampler at the least.
  EXPECT_GT(fp8.size(), 20u);
  EXPECT_GT(int8.size(), 20u);
  for (const char *kind :
       {"folio_paged_prefill_fp8_e4m3", "folio_row_", "folio_rotary_",
        "folio_embedding_", "folio_linear_bf16", "folio_linear_int8",
        "folio_linear_int4", "folio_linear_fp8_e4m3"}) {
    bool found = false;
    for (const auto &[name, text] : fp8)
      found |= name.rfind(kind, 0) == 0;
    EXPECT_TRUE(found) << "no " << kind << " kernel among the models'";
  }
  std::map<std::string, std::string> fp8Sample = perStructure(fp8, keys),
                                     int8Sample = perStructure(int8, keys);
  // The four compiles are independent: NVRTC is thread-safe.
  std::vector<std::future<void>> runs;
  runs.push_back(
      std::async(std::launch::async, [&] { compileAll(fp8, "sm_90a"); }));
  runs.push_back(
      std::async(std::launch::async, [&] { compileAll(int8, "sm_80"); }));
  runs.push_back(
      std::async(std::launch::async, [&] { compileAll(fp8Sample, "sm_89"); }));
  runs.push_back(
      std::async(std::launch::async, [&] { compileAll(int8Sample, "sm_86"); }));
  for (std::future<void> &r : runs)
    r.get();
  auto done = std::chrono::steady_clock::now();
  std::cout << modelPaths(FOLIO_SOURCE_DIR).size() << " models, " << fp8.size()
            << " fp8 and " << int8.size() << " int8 kernels ("
            << fp8Sample.size() << " and " << int8Sample.size()
            << " structures); plans "
            << std::chrono::duration<double>(compiled - start).count()
            << " s, NVRTC "
            << std::chrono::duration<double>(done - compiled).count() << " s\n";
}

/// The bundled model compiled for sm_90a with `dtype` weights, and its
/// CUDA kernels and the kinds no generator covers.
void bundledKernels(const char *dtype, std::unique_ptr<plan::Plan> &out,
                    std::vector<compiler::PlannedCudaKernel> &kernels,
                    std::vector<std::string> &missing) {
  mlir::folio::CompileToPlanOptions options;
  options.target = "sm_90a";
  options.weightDtype = dtype;
  auto p = mlir::folio::compileONNXToPlan(modelPaths(FOLIO_SOURCE_DIR).front(),
                                          options);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  out = std::make_unique<plan::Plan>(std::move(*p));
  ASSERT_TRUE(compiler::collectAllCudaKernels(*out, kernels, missing));
}

TEST(CudaModelKernels, EveryGemmOfStoredWeightsHasALinearKernel) {
  for (const char *dtype : {"none", "bf16", "int4"}) {
    SCOPED_TRACE(dtype);
    std::unique_ptr<plan::Plan> p;
    std::vector<compiler::PlannedCudaKernel> kernels;
    std::vector<std::string> missing;
    ASSERT_NO_FATAL_FAILURE(bundledKernels(dtype, p, kernels, missing));
    auto has = [&](const std::string &kind) {
      return std::find(missing.begin(), missing.end(), kind) != missing.end();
    };
    // Weights left as f32 constants have no stored form to read.
    bool stored = std::string(dtype) != "none";
    EXPECT_EQ(has("linear"), !stored);
    EXPECT_EQ(has("gated_mlp"), !stored);
    EXPECT_EQ(has("gather_rows_linear"), !stored);
    // With stored weights every kernel of the bundled model is generated,
    // the token-id casts included.
    if (stored) {
      EXPECT_EQ(missing, std::vector<std::string>{});
    }
    // Each linear step runs one linear kernel, each gated MLP two (gate
    // and up stacked, then down) around its activation.
    std::map<int32_t, int> gemms, activations;
    for (const compiler::PlannedCudaKernel &k : kernels)
      for (int32_t step : k.steps) {
        if (k.kernel.name.rfind("folio_linear_", 0) == 0)
          ++gemms[step];
        if (k.kernel.name.rfind("folio_row_gated_", 0) == 0)
          ++activations[step];
      }
    int linears = 0, mlps = 0;
    for (size_t i = 0; i < p->steps.size(); ++i) {
      const std::string &kind = p->steps[i].kind;
      if (kind != "linear" && kind != "gated_mlp")
        continue;
      (kind == "linear" ? linears : mlps) += 1;
      int32_t step = int32_t(i);
      EXPECT_EQ(gemms[step], !stored            ? 0
                             : kind == "linear" ? 1
                                                : 2)
          << kind << " at " << p->steps[i].name;
      // A gated MLP without its GEMMs has no launches at all.
      if (kind == "gated_mlp") {
        EXPECT_EQ(activations[step], stored ? 1 : 0);
      }
    }
    EXPECT_GT(linears, 0);
    EXPECT_GT(mlps, 0);
    if (std::string(dtype) == "int4") {
      for (const compiler::PlannedCudaKernel &k : kernels)
        if (k.kernel.name.rfind("folio_linear_", 0) == 0) {
          EXPECT_EQ(k.kernel.name.rfind("folio_linear_int4_g128_", 0), 0u)
              << k.kernel.name;
        }
    }
  }
}

// Prefill attention runs on tensor cores (bf16 inputs) where every stored
// weight is 16 bits or fewer, and on CUDA cores in f32 where the plan
// keeps its weights in f32; decode attention is f32 either way.
TEST(CudaModelKernels, PrefillTakesTensorCoresUnlessWeightsAreF32) {
  for (const char *dtype : {"f32", "none", "bf16", "f16", "int8", "int4"}) {
    SCOPED_TRACE(dtype);
    std::unique_ptr<plan::Plan> p;
    std::vector<compiler::PlannedCudaKernel> kernels;
    std::vector<std::string> missing;
    ASSERT_NO_FATAL_FAILURE(bundledKernels(dtype, p, kernels, missing));
    const bool narrow =
        std::string(dtype) != "f32" && std::string(dtype) != "none";
    int prefills = 0;
    for (const compiler::PlannedCudaKernel &k : kernels)
      if (const auto *s = std::get_if<PagedPrefillSpec>(&k.spec)) {
        ++prefills;
        EXPECT_EQ(s->tensorCores, narrow) << k.kernel.name;
        EXPECT_EQ(k.kernel.source.find("pagedPrefillMma<") != std::string::npos,
                  narrow);
      }
    EXPECT_GT(prefills, 0);
  }
}

} // namespace
} // namespace folio::cuda::test
