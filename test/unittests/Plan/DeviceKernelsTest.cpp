//===- DeviceKernelsTest.cpp - GPU kernels embedded in a plan -------------===//
//
// The plan's device-kernel section: records round-trip, every field is
// checked (arch, steps, byte ranges, checksums), the CPU executor runs a
// plan that carries them exactly as one without, and with NVRTC the AOT
// path embeds real cubins and PTX.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/NVRTC/Nvrtc.h"
#include "compiler/Plan/CudaKernels.h"
#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Core/Engine.h"
#include "runtime/Plan/PlanIO.h"
#include "test/unittests/Plan/ZooLlama.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace folio;

namespace {

plan::Plan compileLlama() { return folio::testing::compileZooLlama(); }

core::GenerateResult run(std::shared_ptr<const plan::Plan> p) {
  return folio::testing::runZooLlama(std::move(p), 4);
}

std::vector<int32_t> stepsOfKind(const plan::Plan &p, const std::string &k) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == k)
      out.push_back(int32_t(i));
  return out;
}

/// A record over `bytes` appended to the blob (fake images: the plan checks
/// ranges and checksums, the driver checks the contents).
plan::DeviceKernel addKernel(plan::Plan &p, const std::string &name,
                             const std::string &arch,
                             std::vector<int32_t> steps) {
  plan::DeviceKernel k;
  k.name = name;
  k.key = name + ":test";
  k.arch = arch;
  k.steps = std::move(steps);
  std::string cubin = "cubin of " + name + " for " + arch;
  std::string ptx = ".entry " + name + std::string(1, '\0');
  k.cubinBytes = cubin.size();
  k.cubinOffset = p.blob.append(cubin.data(), cubin.size());
  k.cubinHash = plan::planHash(cubin.data(), cubin.size());
  k.ptxBytes = ptx.size();
  k.ptxOffset = p.blob.append(ptx.data(), ptx.size());
  k.ptxHash = plan::planHash(ptx.data(), ptx.size());
  k.registers = 40;
  k.spillStoreBytes = k.spillLoadBytes = k.stackFrameBytes = 0;
  k.sharedBytes = 32;
  p.deviceKernels.push_back(k);
  return k;
}

std::string refusal(const plan::Plan &p) {
  auto parsed = plan::parsePlan(plan::serializePlan(p));
  return parsed ? std::string() : parsed.status().message();
}

TEST(DeviceKernels, RoundTripAndTheCPUExecutorIgnoresThem) {
  auto base = std::make_shared<const plan::Plan>(compileLlama());
  ASSERT_FALSE(base->steps.empty());
  core::GenerateResult want = run(base);

  plan::Plan withKernels = *base;
  std::vector<int32_t> writes = stepsOfKind(withKernels, "kv_write");
  ASSERT_FALSE(writes.empty());
  addKernel(withKernels, "folio_kv_write_x", "sm_90a", writes);
  addKernel(withKernels, "folio_kv_write_x", "sm_80", writes);
  std::string path = ::testing::TempDir() + "/with-kernels.folio";
  ASSERT_TRUE(plan::writePlan(withKernels, path));
  auto loaded = plan::readPlan(path);
  ASSERT_TRUE(loaded) << loaded.status().message();
  ASSERT_EQ(loaded->deviceKernels.size(), 2u);
  const plan::DeviceKernel &k = loaded->deviceKernels[1];
  EXPECT_EQ(k.name, "folio_kv_write_x");
  EXPECT_EQ(k.arch, "sm_80");
  EXPECT_EQ(k.steps, writes);
  EXPECT_EQ(k.registers, 40);
  EXPECT_EQ(k.sharedBytes, 32);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(loaded->blob.data() +
                                                       k.cubinOffset),
                        k.cubinBytes),
            "cubin of folio_kv_write_x for sm_80");
  EXPECT_EQ(plan::serializePlan(*loaded), plan::serializePlan(withKernels));
  core::GenerateResult got =
      run(std::make_shared<const plan::Plan>(std::move(*loaded)));
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.logits, want.logits);
  std::remove(path.c_str());
}

TEST(DeviceKernels, EveryFieldIsChecked) {
  plan::Plan base = compileLlama();
  std::vector<int32_t> writes = stepsOfKind(base, "kv_write");
  std::vector<int32_t> attention = stepsOfKind(base, "paged_attention");
  ASSERT_FALSE(writes.empty());
  ASSERT_FALSE(attention.empty());
  auto with = [&](auto change) {
    plan::Plan p = base;
    addKernel(p, "folio_k", "sm_89", writes);
    change(p, p.deviceKernels.back());
    return refusal(p);
  };
  auto expectRefused = [](const std::string &got, const std::string &want) {
    EXPECT_NE(got.find(want), std::string::npos)
        << "got: '" << got << "', want: '" << want << "'";
  };
  EXPECT_EQ(with([](plan::Plan &, plan::DeviceKernel &) {}), "");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.arch = "sm_75"; }),
      "plan: device kernel 0 ('folio_k' for 'sm_75') names an "
      "unknown arch; supported: sm_80, sm_86, sm_89, sm_90a");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.name.clear(); }),
      "has no name or no cache key");
  expectRefused(with([&](plan::Plan &p, plan::DeviceKernel &k) {
                  k.steps = {int32_t(p.steps.size())};
                }),
                "in increasing order");
  expectRefused(with([&](plan::Plan &, plan::DeviceKernel &k) {
                  k.steps = {attention[0], attention[0]};
                }),
                "in increasing order");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.steps.clear(); }),
      "runs no step");
  expectRefused(with([](plan::Plan &p, plan::DeviceKernel &k) {
                  k.cubinOffset = p.blob.size();
                }),
                "its cubin (");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.ptxBytes = 0; }),
      "its PTX (0 bytes");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.cubinOffset += 1; }),
      "not a multiple of 64");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.ptxHash ^= 1; }),
      "its PTX fails its checksum");
  expectRefused(
      with([](plan::Plan &, plan::DeviceKernel &k) { k.registers = -2; }),
      "has a negative resource figure");
  expectRefused(with([](plan::Plan &p, plan::DeviceKernel &k) {
                  p.deviceKernels.push_back(k);
                }),
                "plan: device kernel 1 ('folio_k' for 'sm_89') is listed "
                "twice");
}

// A flipped bit in a cubin is caught by its own checksum even when the
// weights' hash is skipped (--no-verify-weights).
TEST(DeviceKernels, FlippedCubinBitIsCaughtWithoutTheWeightsHash) {
  plan::Plan p = compileLlama();
  plan::DeviceKernel k =
      addKernel(p, "folio_k", "sm_90a", stepsOfKind(p, "kv_write"));
  std::string bytes = plan::serializePlan(p);
  uint64_t blobOffset = 0;
  std::memcpy(&blobOffset, bytes.data() + 32, 8);
  bytes[blobOffset + k.cubinOffset + 3] ^= 0x10;
  plan::ReadPlanOptions trust;
  trust.verifyWeights = false;
  auto parsed = plan::parsePlan(bytes, trust);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.status().message(),
            "plan: device kernel 0 ('folio_k' for 'sm_90a'): its cubin fails "
            "its checksum; the file is corrupt (re-copy or recompile it)");
}

// folioc --target=sm_XX's path: every kernel of the plan compiled by
// NVRTC and embedded; the result loads and still runs on the CPU.
TEST(DeviceKernels, EmbedsCompiledKernels) {
  plan::Plan p = compileLlama();
  cuda::KernelCacheOptions noCache;
  noCache.enabled = false;
  std::vector<compiler::EmbeddedCudaKernel> embedded;
  std::vector<std::string> notGenerated;
  Status st =
      compiler::embedCudaKernels(p, "sm_89", noCache, embedded, notGenerated);
  if (!cuda::nvrtcAvailable()) {
    ASSERT_FALSE(st);
    EXPECT_NE(st.message().find("this build has no CUDA toolkit"),
              std::string::npos)
        << st.message();
    return;
  }
  ASSERT_TRUE(st) << st.message();
  // At least kv_write, the decode kernel and its combine, each running
  // the steps of its kind.
  ASSERT_GE(p.deviceKernels.size(), 3u);
  ASSERT_EQ(embedded.size(), p.deviceKernels.size());
  std::map<std::string, std::vector<int32_t>> stepsOf;
  for (const plan::DeviceKernel &k : p.deviceKernels) {
    EXPECT_EQ(k.arch, "sm_89");
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_GE(k.spillStoreBytes, 0) << k.name;
    const char *ptx =
        reinterpret_cast<const char *>(p.blob.data() + k.ptxOffset);
    EXPECT_EQ(ptx[k.ptxBytes - 1], '\0');
    EXPECT_NE(std::string(ptx).find(".entry " + k.name), std::string::npos);
    for (const char *prefix :
         {"folio_kv_write_", "folio_paged_decode_combine_"})
      if (k.name.rfind(prefix, 0) == 0)
        stepsOf[prefix] = k.steps;
  }
  EXPECT_EQ(stepsOf["folio_kv_write_"], stepsOfKind(p, "kv_write"));
  EXPECT_EQ(stepsOf["folio_paged_decode_combine_"],
            stepsOfKind(p, "paged_attention"));
  auto parsed = plan::parsePlan(plan::serializePlan(p));
  ASSERT_TRUE(parsed) << parsed.status().message();
  EXPECT_EQ(parsed->deviceKernels.size(), p.deviceKernels.size());
  core::GenerateResult got =
      run(std::make_shared<const plan::Plan>(std::move(*parsed)));
  EXPECT_EQ(got.tokens.size(), 2u);

  std::vector<compiler::EmbeddedCudaKernel> none;
  st = compiler::embedCudaKernels(p, "sm_75", noCache, none, notGenerated);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "--target=sm_75 is not a GPU target; supported: "
                          "sm_80, sm_86, sm_89, sm_90a");
}

} // namespace
