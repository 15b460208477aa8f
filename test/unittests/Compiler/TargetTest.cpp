//===- TargetTest.cpp - Target and KV-cache dtype resolution --------------===//

#include "compiler/Target/Target.h"

#include <gtest/gtest.h>

using namespace folio;

namespace {

const Target kAllTargets[] = {Target::CPU, Target::SM80, Target::SM86,
                              Target::SM89, Target::SM90a};

TEST(TargetTest, AutoIsFP8OnAdaAndHopper) {
  EXPECT_EQ(resolveKVCacheDType(Target::SM89, KVCacheDType::Auto),
            KVCacheDType::FP8E4M3);
  EXPECT_EQ(resolveKVCacheDType(Target::SM90a, KVCacheDType::Auto),
            KVCacheDType::FP8E4M3);
}

TEST(TargetTest, AutoIsInt8Elsewhere) {
  EXPECT_EQ(resolveKVCacheDType(Target::CPU, KVCacheDType::Auto),
            KVCacheDType::Int8);
  EXPECT_EQ(resolveKVCacheDType(Target::SM80, KVCacheDType::Auto),
            KVCacheDType::Int8);
  EXPECT_EQ(resolveKVCacheDType(Target::SM86, KVCacheDType::Auto),
            KVCacheDType::Int8);
}

TEST(TargetTest, ExplicitDTypeIsKeptOnEveryTarget) {
  for (Target target : kAllTargets)
    for (KVCacheDType dtype :
         {KVCacheDType::F32, KVCacheDType::F16, KVCacheDType::BF16,
          KVCacheDType::FP8E4M3, KVCacheDType::FP8E5M2, KVCacheDType::Int8,
          KVCacheDType::Int4, KVCacheDType::Int2})
      EXPECT_EQ(resolveKVCacheDType(target, dtype), dtype)
          << targetName(target) << " " << kvCacheDTypeName(dtype);
}

TEST(TargetTest, AutoNeverStaysAuto) {
  for (Target target : kAllTargets)
    EXPECT_NE(resolveKVCacheDType(target, KVCacheDType::Auto),
              KVCacheDType::Auto);
}

TEST(TargetTest, TargetNamesRoundTrip) {
  for (Target target : kAllTargets) {
    std::optional<Target> parsed = parseTarget(targetName(target));
    ASSERT_TRUE(parsed.has_value()) << targetName(target);
    EXPECT_EQ(*parsed, target);
  }
  EXPECT_EQ(parseTarget("sm_90a"), Target::SM90a);
  EXPECT_EQ(parseTarget("cpu"), Target::CPU);
}

TEST(TargetTest, UnknownTargetsAreRejected) {
  for (const char *bad : {"", "sm_90", "SM_80", "sm_75", "cuda", "cpu "})
    EXPECT_FALSE(parseTarget(bad).has_value()) << "'" << bad << "'";
  EXPECT_EQ(supportedTargets(), "cpu, sm_80, sm_86, sm_89, sm_90a");
}

TEST(TargetTest, DTypeNamesRoundTrip) {
  for (const char *name : {"auto", "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2",
                           "int8", "int4", "int2"}) {
    std::optional<KVCacheDType> parsed = parseKVCacheDType(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(kvCacheDTypeName(*parsed), name);
  }
  for (const char *bad : {"fp8", "int3", "float", "e4m3", "AUTO"})
    EXPECT_FALSE(parseKVCacheDType(bad).has_value()) << bad;
}

TEST(TargetTest, DTypeWidths) {
  EXPECT_EQ(kvCacheDTypeBits(KVCacheDType::F32), 32u);
  EXPECT_EQ(kvCacheDTypeBits(KVCacheDType::BF16), 16u);
  EXPECT_EQ(kvCacheDTypeBits(KVCacheDType::FP8E4M3), 8u);
  EXPECT_EQ(kvCacheDTypeBits(KVCacheDType::Int8), 8u);
  EXPECT_EQ(kvCacheDTypeBits(KVCacheDType::Int4), 4u);
  EXPECT_EQ(kvCacheDTypeBits(KVCacheDType::Int2), 2u);
}

TEST(TargetTest, BlockSizesArePowersOfTwoUpTo256) {
  for (int64_t ok : {1, 2, 4, 8, 16, 32, 64, 128, 256})
    EXPECT_TRUE(isValidBlockSize(ok)) << ok;
  for (int64_t bad : {0, -16, 3, 12, 24, 257, 512, 1000})
    EXPECT_FALSE(isValidBlockSize(bad)) << bad;
}

} // namespace
