//===- ModelEmulationTest.cpp - Every model kernel run against the CPU ----===//
//
// Every distinct CUDA kernel of the zoo models' plans (ModelKernels.h),
// compiled as host C++ at build time, runs through runtime/Device on the
// fake driver (host emulation) with the GPU check's measurements
// (tools/folio-gpu-bench): each on small random inputs against the CPU
// kernels (kv_write bit for bit, attention within 1e-4, row programs
// against their evaluation in double, linear within the CPU tests' bound,
// rotary, gathers and samplers exactly). So every kernel variant the
// pipeline makes for these models runs, not only TestVariants.h's.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

#include "codegen/CUDA/Templates/KernelArgs.cuh"
#include "test/unittests/CUDA/ModelKernelRegistry.h"
#include "test/unittests/CUDA/ModelKernels.h"
#include "tools/folio-gpu-bench/GpuBench.h"

#include "codegen/CPU/Linear.h"
#include "runtime/Device/DevicePlan.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include <iostream>
#include <iterator>
#include <map>
#include <type_traits>

namespace folio::cuda::test {
namespace {

/// Runs one kernel of the models with the GPU check's measurement of its
/// kind at small shapes; an error says how it differs from the CPU.
Status runKernel(const device::CudaDevice &dev,
                 const gpubench::LoadedKernels &loaded,
                 const AnyKernelSpec &spec) {
  return std::visit(
      [&](const auto &s) -> Status {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, KVWriteSpec>) {
          return gpubench::measureKVWrite(dev, loaded, {s, 19}, 1).status();
        } else if constexpr (std::is_same_v<S, PagedDecodeSpec>) {
          // Two partitions: the combine kernel runs too.
          return gpubench::measurePagedDecode(
                     dev, loaded, {s, 2, s.partition + s.blockSize + 3}, 1)
              .status();
        } else if constexpr (std::is_same_v<S, PagedDecodeCombineSpec>) {
          return Status::ok(); // with its decode kernel
        } else if constexpr (std::is_same_v<S, PagedPrefillSpec>) {
          // A chunk after cached context crossing key tiles and blocks.
          return gpubench::measurePagedPrefill(
                     dev, loaded, {s, 2, s.keyTile + s.blockSize + 5, 9}, 1)
              .status();
        } else if constexpr (std::is_same_v<S, RowKernelSpec>) {
          return gpubench::measureRowKernel(dev, loaded, {s, 3}, 1).status();
        } else if constexpr (std::is_same_v<S, RotarySpec>) {
          return gpubench::measureRotary(dev, loaded, {s, 3}, 1).status();
        } else if constexpr (std::is_same_v<S, GatherSpec>) {
          return gpubench::measureGather(dev, loaded, {s, 5, 40}, 1).status();
        } else if constexpr (std::is_same_v<S, SampleSpec>) {
          return s.mode == SampleMode::Verify
                     ? gpubench::measureVerify(dev, loaded, {s, 6, 3, 300}, 1)
                           .status()
                     : gpubench::measureSample(dev, loaded, {s, 6, 300}, 1)
                           .status();
        } else if constexpr (std::is_same_v<S, LinearSpec>) {
          return gpubench::measureLinear(dev, loaded, {s, 21, 3}, 1).status();
        } else {
          return gpubench::measureCast(dev, loaded, {s, 300}, 1).status();
        }
      },
      spec);
}

TEST(CudaModelKernelsEmulation, EveryModelKernelMatchesTheCpu) {
  std::string error;
  std::map<std::string, const ModelKernelEntry *> generated;
  ASSERT_TRUE(registerModelKernels(generated, error)) << error;
  Expected<std::unique_ptr<device::CudaDevice>> dev =
      device::CudaDevice::open();
  ASSERT_TRUE(bool(dev)) << dev.status().message();

  // The kernels of the plans, as compiled here, must be the ones generated
  // at build time, name for name.
  std::vector<std::string> errors;
  auto kernels = modelKernels(FOLIO_SOURCE_DIR, "sm_90a", errors);
  for (auto &[name, k] : modelKernels(FOLIO_SOURCE_DIR, "sm_80", errors))
    kernels.emplace(name, k);
  for (const std::string &e : errors)
    ADD_FAILURE() << e;
  EXPECT_EQ(kernels.size(), generated.size());
  // The fake driver's module is its image: one naming every kernel.
  std::string image = ".version 8.0\n";
  for (const auto &[name, k] : kernels)
    image += ".entry " + name + "(\n";
  gpubench::LoadedKernels loaded;
  Expected<device::CudaModule> module =
      (*dev)->loadModule(image.c_str(), "the models' kernels");
  ASSERT_TRUE(bool(module)) << module.status().message();
  loaded.module = std::move(*module);
  for (const auto &[name, k] : kernels) {
    ASSERT_TRUE(generated.count(name)) << name << " was not generated";
    Expected<device::CudaKernel> f = (*dev)->kernel(loaded.module, name);
    ASSERT_TRUE(bool(f)) << f.status().message();
    loaded.byName[name] = *f;
  }
  std::map<int, int> ran;
  for (const auto &[name, k] : kernels) {
    Status s = runKernel(**dev, loaded, k.spec);
    EXPECT_TRUE(bool(s)) << name << ": " << s.message();
    ++ran[int(k.spec.index())];
  }
  // Every kind of kernel was among them.
  const char *kinds[] = {"kv_write", "decode", "combine", "prefill", "row",
                         "rotary",   "gather", "sample",  "linear",  "cast"};
  static_assert(std::size(kinds) == std::variant_size_v<AnyKernelSpec>);
  std::cout << kernels.size() << " kernels:";
  for (int kind = 0; kind < int(std::size(kinds)); ++kind) {
    EXPECT_GT(ran[kind], 0) << "no " << kinds[kind] << " kernel";
    std::cout << " " << kinds[kind] << " " << ran[kind];
  }
  std::cout << "\n";
}

/// The plan folioc writes for a GPU, loaded as an executor loads it: its
/// blob in device memory and its embedded kernels from their images; the
/// linear kernel of its first linear step reads the stored weights where
/// they lie in the uploaded blob and matches the CPU kernel on them.
TEST(CudaModelKernelsEmulation, APlanLoadsOntoTheDeviceAndRunsInPlace) {
  std::string error;
  std::map<std::string, const ModelKernelEntry *> generated;
  ASSERT_TRUE(registerModelKernels(generated, error)) << error;
  mlir::folio::CompileToPlanOptions options;
  options.target = "sm_90a";
  options.weightDtype = "bf16";
  auto compiled = mlir::folio::compileONNXToPlan(
      modelPaths(FOLIO_SOURCE_DIR).front(), options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  auto plan = std::make_shared<plan::Plan>(std::move(*compiled));
  std::vector<compiler::EmbeddedCudaKernel> embedded;
  std::vector<std::string> notGenerated;
  cuda::KernelCacheOptions noCache;
  noCache.enabled = false;
  ASSERT_TRUE(bool(compiler::embedCudaKernels(*plan, "sm_90a", noCache,
                                              embedded, notGenerated)));
  ASSERT_FALSE(embedded.empty());

  Expected<std::unique_ptr<device::CudaDevice>> dev =
      device::CudaDevice::open();
  ASSERT_TRUE(bool(dev)) << dev.status().message();
  Expected<std::unique_ptr<device::DevicePlan>> onDevice =
      device::DevicePlan::load(**dev, plan);
  ASSERT_TRUE(bool(onDevice)) << onDevice.status().message();
  EXPECT_EQ((*onDevice)->images().size(), embedded.size());
  for (const device::KernelImage &image : (*onDevice)->images())
    EXPECT_EQ(image.format, device::KernelImage::Format::Cubin);
  EXPECT_EQ((*onDevice)->blobBytes(), plan->blob.size());
  EXPECT_FALSE(bool((*onDevice)->kernel("folio_no_such_kernel")));

  // The first linear step's kernel over the stored weight in the blob.
  std::vector<compiler::PlannedCudaKernel> kernels;
  ASSERT_TRUE(
      bool(compiler::collectAllCudaKernels(*plan, kernels, notGenerated)));
  const plan::StoredWeight *stored = nullptr;
  const compiler::PlannedCudaKernel *linear = nullptr;
  for (const compiler::PlannedCudaKernel &k : kernels) {
    if (!std::holds_alternative<LinearSpec>(k.spec))
      continue;
    for (const plan::StoredWeight &w : plan->weights)
      if (!stored && w.step == k.steps.front() && w.operand == 1) {
        stored = &w;
        linear = &k;
      }
  }
  ASSERT_TRUE(stored && linear);
  cpu::WeightView v;
  v.storage = cpu::DType::BF16;
  v.n = stored->n;
  v.k = stored->k;
  v.data = plan->blob.data() + stored->dataOffset;
  const int64_t m = 3;
  std::vector<float> x(size_t(m * v.k));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float &e : x)
    e = normal(rng);
  cpu::PackedWeight pw;
  ASSERT_TRUE(cpu::PackedWeight::fromView(v, nullptr, pw).ok());
  std::vector<float> want(size_t(m * v.n));
  ASSERT_TRUE(cpu::linearGemv(x.data(), m, pw, want.data()).ok());

  Expected<device::DeviceBuffer> dx =
      (*dev)->upload(x.data(), x.size() * 4, "x");
  Expected<device::DeviceBuffer> dy = (*dev)->allocate(want.size() * 4, "y");
  ASSERT_TRUE(dx && dy);
  folio_cuda::LinearArgs a{};
  a.x = dx->as<const float>();
  a.m = m;
  a.w = reinterpret_cast<const void *>(
      uintptr_t((*onDevice)->blobAddress(stored->dataOffset)));
  a.y = dy->as<float>();
  a.n = v.n;
  Expected<const device::CudaKernel *> f =
      (*onDevice)->kernel(linear->kernel.name);
  ASSERT_TRUE(bool(f)) << f.status().message();
  device::CudaLaunch l =
      gpubench::toLaunch(linearLaunch(std::get<LinearSpec>(linear->spec), v.n));
  ASSERT_TRUE(bool((*dev)->launch(**f, l, &a)));
  std::vector<float> got(want.size());
  ASSERT_TRUE(bool((*dev)->copyToHost(got.data(), *dy, 0, got.size() * 4)));
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;

  // A device the plan has no image for.
  ::setenv("FOLIO_FAKE_CUDA_CC", "80", 1);
  Expected<std::unique_ptr<device::CudaDevice>> ampere =
      device::CudaDevice::open();
  ::unsetenv("FOLIO_FAKE_CUDA_CC");
  ASSERT_TRUE(bool(ampere));
  Expected<std::unique_ptr<device::DevicePlan>> none =
      device::DevicePlan::load(**ampere, plan);
  ASSERT_FALSE(bool(none));
  EXPECT_NE(none.status().message().find(
                "has no cubin or PTX that runs on sm_80 (the plan holds "
                "sm_90a); compile it with folioc --target=sm_80"),
            std::string::npos)
      << none.status().message();
}

} // namespace
} // namespace folio::cuda::test
