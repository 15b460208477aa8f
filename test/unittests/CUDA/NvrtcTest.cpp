//===- NvrtcTest.cpp - Every generated kernel through NVRTC ---------------===//
//
// Each kernel of TestVariants.h compiles for every supported arch, and its
// resources (registers, spills, shared memory) are recorded in the test's
// output and XML properties. Skipped in a build without CUDA.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/NVRTC/Nvrtc.h"
#include "codegen/CUDA/Emitter.h"
#include "test/unittests/CUDA/KernelStructure.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <iostream>
#include <set>

namespace folio::cuda::test {
namespace {

/// Every prefill, row, rotary, gather, sample, linear and cast kernel of
/// TestVariants.h,
/// plus the prefill tiles folioc picks for common layouts. Compiling them
/// one by one would take a second each (four archs); concatenated into one
/// translation unit (sources are include-guarded) they take one NVRTC run
/// per arch, all of them for sm_90a and one per structure
/// (KernelStructure.h) for the others.
/// Emitter failures of the batch (reported by the batched test: the list
/// is built while tests are being registered).
std::vector<std::string> &batchErrors() {
  static std::vector<std::string> errors;
  return errors;
}

std::vector<GeneratedKernel> emitBatched() {
  std::vector<GeneratedKernel> out;
  auto add = [&](cpu::Status st, const GeneratedKernel &k) {
    if (st.ok())
      out.push_back(k);
    else
      batchErrors().push_back(st.message());
  };
  GeneratedKernel k;
  for (const PagedPrefillSpec &s : pagedPrefillVariants())
    add(emitPagedPrefill(s, k), k);
  for (auto [d, g] :
       {std::pair{128, 4}, std::pair{128, 1}, std::pair{256, 8}}) {
    for (bool tensorCores : {false, true})
      add(emitPagedPrefill(defaultPagedPrefillSpec(cpu::DType::FP8E4M3, d, 16,
                                                   2, g, 0, tensorCores),
                           k),
          k);
  }
  for (const RowKernelSpec &s : rowKernelVariants())
    add(emitRowKernel(s, k), k);
  for (const RotarySpec &s : rotaryVariants())
    add(emitRotary(s, k), k);
  for (const GatherSpec &s : gatherVariants())
    add(emitGather(s, k), k);
  for (const SampleSpec &s : sampleVariants())
    add(emitSample(s, k), k);
  for (const LinearSpec &s : linearVariants())
    add(emitLinear(s, k), k);
  for (const CastSpec &s : castVariants())
    add(emitCast(s, k), k);
  return out;
}

const std::vector<GeneratedKernel> &batchedKernels() {
  static const std::vector<GeneratedKernel> k = emitBatched();
  return k;
}

std::vector<GeneratedKernel> allKernels() {
  std::vector<GeneratedKernel> out;
  std::set<std::string> seen;
  auto add = [&](const GeneratedKernel &k) {
    if (seen.insert(k.name).second)
      out.push_back(k);
  };
  for (const KVWriteSpec &s : kvWriteVariants()) {
    GeneratedKernel k;
    if (emitKVWrite(s, k).ok())
      add(k);
  }
  for (const PagedDecodeSpec &s : pagedDecodeVariants()) {
    GeneratedKernel m, c;
    if (emitPagedDecode(s, m, c).ok()) {
      add(m);
      add(c);
    }
  }
  // One of each newer kind on its own, so that each compiles as a single
  // self-contained source; batchedKernels() has them all.
  const std::vector<GeneratedKernel> &batched = batchedKernels();
  // (Prefill's two kernels, on CUDA cores and tensor cores, are two
  // kinds.)
  std::set<std::string> kinds;
  for (const GeneratedKernel &k : batched) {
    size_t products = k.key.find(";products=");
    std::string kind =
        k.key.substr(0, k.key.find(':')) +
        (products == std::string::npos
             ? ""
             : k.key.substr(products,
                            k.key.find(';', products + 1) - products));
    if (kinds.insert(kind).second)
      add(k);
  }
  return out;
}

const std::vector<GeneratedKernel> &kernels() {
  static const std::vector<GeneratedKernel> k = allKernels();
  return k;
}

class CudaNvrtc : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaNvrtc, CompilesForEveryArch) {
  if (!nvrtcAvailable())
    GTEST_SKIP() << "this build has no CUDA toolkit (FOLIO_ENABLE_CUDA=OFF)";
  const GeneratedKernel &k = kernels()[GetParam()];
  for (const std::string &arch : supportedArchs()) {
    CompiledKernel c;
    cpu::Status st = compileWithNvrtc(k.name, k.source, arch, c);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_FALSE(c.cubin.empty()) << arch;
    EXPECT_NE(c.ptx.find(".entry " + k.name), std::string::npos) << arch;
    EXPECT_GT(c.registers, 0) << arch << " log:\n" << c.log;
    EXPECT_GE(c.sharedBytes, 0) << arch;
    EXPECT_GE(c.spillStoreBytes, 0) << arch;
    std::cout << "nvrtc " << nvrtcVersion() << " " << k.name << " " << arch
              << ": registers " << c.registers << ", spill stores "
              << c.spillStoreBytes << " B, spill loads " << c.spillLoadBytes
              << " B, stack " << c.stackFrameBytes << " B, static smem "
              << c.sharedBytes << " B\n";
    RecordProperty(arch + "_registers", c.registers);
    RecordProperty(arch + "_spill_stores", c.spillStoreBytes);
    RecordProperty(arch + "_smem", c.sharedBytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CudaNvrtc,
                         ::testing::Range(size_t(0), kernels().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                           return kernels()[info.param].name;
                         });

TEST(CudaNvrtcBatched, EveryKernelCompilesForEveryArchInOneUnit) {
  if (!nvrtcAvailable())
    GTEST_SKIP() << "this build has no CUDA toolkit (FOLIO_ENABLE_CUDA=OFF)";
  EXPECT_TRUE(batchErrors().empty()) << batchErrors().front();
  ASSERT_GT(batchedKernels().size(), 20u);
  // Every kernel for sm_90a, one per structure for the other archs.
  std::vector<const GeneratedKernel *> all, sample;
  std::set<std::string> structures;
  for (const GeneratedKernel &k : batchedKernels()) {
    all.push_back(&k);
    if (structures.insert(kernelStructure(k.key)).second)
      sample.push_back(&k);
  }
  EXPECT_LT(sample.size(), all.size());
  for (const std::string &arch : supportedArchs()) {
    const std::vector<const GeneratedKernel *> &kernels =
        arch == "sm_90a" ? all : sample;
    std::string source;
    for (const GeneratedKernel *k : kernels)
      source += k->source;
    CompiledKernel c;
    cpu::Status st =
        compileWithNvrtc("folio_batched_test_kernels", source, arch, c);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_FALSE(c.cubin.empty()) << arch;
    for (const GeneratedKernel *k : kernels)
      EXPECT_NE(c.ptx.find(".entry " + k->name + "("), std::string::npos)
          << k->name << " is missing from the PTX for " << arch;
  }
}

TEST(CudaNvrtcPortable, PortableTwinCompilesForTheDevice) {
  if (!nvrtcAvailable())
    GTEST_SKIP() << "this build has no CUDA toolkit (FOLIO_ENABLE_CUDA=OFF)";
  GeneratedKernel m, c;
  ASSERT_TRUE(emitPagedDecode(pagedDecodeVariants()[3], m, c).ok());
  CompiledKernel fast, portable;
  ASSERT_TRUE(compileWithNvrtc(m.name, m.source, "sm_90a", fast).ok());
  cpu::Status st = compileWithNvrtc(m.name, m.source, "sm_90a", portable,
                                    {"-DFOLIO_KERNEL_PORTABLE"});
  ASSERT_TRUE(st.ok()) << st.message();
  // The fast path's ex2.approx and the twin's libm expf differ in PTX.
  EXPECT_NE(fast.ptx, portable.ptx);
}

TEST(CudaNvrtcPortable, TensorCorePrefillRunsMmaOnlyOnTheFastPath) {
  if (!nvrtcAvailable())
    GTEST_SKIP() << "this build has no CUDA toolkit (FOLIO_ENABLE_CUDA=OFF)";
  // A small tile: the twin's unrolled shuffles make NVRTC slow on large
  // ones, and the fast path's selection is the same on every arch.
  PagedPrefillSpec s{cpu::DType::BF16, 32, 16, 1, 1, 0, 16, 16, 32, true};
  GeneratedKernel k;
  ASSERT_TRUE(emitPagedPrefill(s, k).ok());
  for (const std::string &arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    CompiledKernel fast, portable;
    ASSERT_TRUE(compileWithNvrtc(k.name, k.source, arch, fast).ok());
    cpu::Status st = compileWithNvrtc(k.name, k.source, arch, portable,
                                      {"-DFOLIO_KERNEL_PORTABLE"});
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_NE(
        fast.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
        std::string::npos);
    EXPECT_EQ(portable.ptx.find("mma.sync"), std::string::npos);
    EXPECT_NE(portable.ptx.find("shfl.sync"), std::string::npos);
    EXPECT_EQ(fast.spillStoreBytes, 0);
  }
}

TEST(CudaNvrtcErrors, LogNamesTheKernelAndArch) {
  CompiledKernel c;
  cpu::Status st = compileWithNvrtc(
      "folio_broken", "extern \"C\" __global__ void folio_broken() { x; }",
      "sm_89", c);
  ASSERT_FALSE(st.ok());
  if (!nvrtcAvailable()) {
    EXPECT_NE(st.message().find("this build has no CUDA toolkit"),
              std::string::npos);
    return;
  }
  EXPECT_NE(st.message().find("NVRTC, kernel folio_broken for sm_89 failed"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("identifier \"x\" is undefined"),
            std::string::npos)
      << st.message();
  st = compileWithNvrtc("folio_broken", "", "sm_70", c);
  EXPECT_EQ(st.message(), "NVRTC, kernel folio_broken for sm_70: unknown "
                          "arch; supported: sm_80, sm_86, sm_89, sm_90a");
}

} // namespace
} // namespace folio::cuda::test
