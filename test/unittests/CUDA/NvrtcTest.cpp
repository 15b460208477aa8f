//===- NvrtcTest.cpp - Every generated kernel through NVRTC ---------------===//
//
// Each kernel of TestVariants.h compiles for every supported arch, and its
// resources (registers, spills, shared memory) are recorded in the test's
// output and XML properties. Skipped in a build without CUDA.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/NVRTC/Nvrtc.h"
#include "codegen/CUDA/Emitter.h"
#include "test/unittests/CUDA/TestVariants.h"

#include <gtest/gtest.h>

#include <iostream>
#include <set>

namespace folio::cuda::test {
namespace {

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
