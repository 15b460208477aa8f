//===- PlanMutatorTest.cpp - The plan fuzzer's mutator --------------------===//
//
// The plan fuzzer is only as good as its walker: if PlanIO's layout changes
// and the walker does not, every mutation degrades to raw bytes that stop
// at the checksum. These tests fail then.
//
//===----------------------------------------------------------------------===//

#include "tools/fuzz/PlanMutator.h"

#include "compiler/Plan/LowerToPlan.h"
#include "runtime/Plan/PlanIO.h"

#include "gtest/gtest.h"

using namespace folio;

namespace {

std::string compiledLlama() {
  auto p = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return "";
  }
  return plan::serializePlan(*p);
}

TEST(PlanMutator, LayoutWalkerCoversCompiledPlans) {
  std::string bytes = compiledLlama();
  // Every value, step and kernel contributes fields; a walker that lost
  // its way returns -1.
  EXPECT_GT(fuzz::countPlanFields(bytes), 1000);
  std::string resealed = bytes;
  fuzz::resealPlan(resealed);
  EXPECT_EQ(resealed, bytes);
  EXPECT_EQ(fuzz::countPlanFields(bytes.substr(0, 100)), -1);
}

// The device-kernel records (folioc --target=sm_XX) walk too: each adds
// its fields, and the walk still ends at the header's end.
TEST(PlanMutator, LayoutWalkerCoversDeviceKernels) {
  auto p = mlir::folio::compileONNXToPlan(
      std::string(FOLIO_SOURCE_DIR) + "/models/zoo/llama/cached.onnx", {});
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  int64_t without = fuzz::countPlanFields(plan::serializePlan(*p));
  plan::DeviceKernel k;
  k.name = "folio_k";
  k.key = "k";
  k.arch = "sm_90a";
  for (size_t i = 0; i < p->steps.size(); ++i)
    if (p->steps[i].kind == "kv_write")
      k.steps.push_back(int32_t(i));
  std::string image = "image";
  k.cubinBytes = k.ptxBytes = image.size();
  k.cubinOffset = p->blob.append(image.data(), image.size());
  k.ptxOffset = p->blob.append(image.data(), image.size());
  k.cubinHash = k.ptxHash = plan::planHash(image.data(), image.size());
  p->deviceKernels.push_back(k);
  std::string bytes = plan::serializePlan(*p);
  ASSERT_TRUE(bool(plan::parsePlan(bytes)));
  // Three strings, each step id and eleven numbers.
  EXPECT_EQ(fuzz::countPlanFields(bytes),
            without + 3 + int64_t(k.steps.size()) + 11);
}

// Most mutations are resealed: they reach the parser and validatePlan
// instead of stopping at a checksum.
TEST(PlanMutator, MutationsGetPastTheChecksums) {
  std::string seed = compiledLlama();
  std::mt19937_64 rng(1);
  int checksum = 0, total = 200;
  for (int i = 0; i < total; ++i) {
    std::string bytes = seed;
    fuzz::mutatePlan(bytes, rng);
    Expected<plan::Plan> p = plan::parsePlan(bytes);
    if (!p && p.status().message().find("checksum") != std::string::npos)
      ++checksum;
  }
  EXPECT_LT(checksum, total / 5);
}

} // namespace
