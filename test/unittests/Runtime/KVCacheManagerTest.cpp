//===- KVCacheManagerTest.cpp - Block tables and prefix caching -----------===//

#include "runtime/KVCache/KVCacheManager.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace folio;

namespace {

std::vector<TokenId> iota(size_t n, TokenId first = 0) {
  std::vector<TokenId> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

KVCacheConfig config(size_t numBlocks, bool caching = true) {
  KVCacheConfig c;
  c.numBlocks = numBlocks;
  c.blockSize = 4;
  c.enablePrefixCaching = caching;
  return c;
}

/// Allocates and "computes" a whole prompt, as one scheduler step would.
void prefill(KVCacheManager &kv, const RequestId &id,
             const std::vector<TokenId> &tokens) {
  ComputedBlocks hit = kv.findCachedPrefix(id, tokens, 0);
  ASSERT_TRUE(
      kv.allocateSlots(id, hit.numTokens, tokens.size() - hit.numTokens, hit));
  kv.cacheComputedBlocks(id, tokens, tokens.size(), 0);
}

TEST(RuntimeKVCacheManager, ConfigValidation) {
  EXPECT_FALSE(config(1).validate());
  KVCacheConfig zero = config(8);
  zero.blockSize = 0;
  EXPECT_FALSE(zero.validate());
  EXPECT_TRUE(config(2).validate());
}

TEST(RuntimeKVCacheManager, AllocatesWholeBlocksAndAppends) {
  KVCacheManager kv(config(10));
  auto first = kv.allocateSlots("a", 0, 5);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->size(), 2u);
  // The second block still has room for 3 tokens.
  auto second = kv.allocateSlots("a", 5, 3);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->empty());
  auto third = kv.allocateSlots("a", 8, 1);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->size(), 1u);
  std::vector<BlockId> table = *first;
  table.insert(table.end(), third->begin(), third->end());
  EXPECT_EQ(kv.blockIds("a"), table);
  EXPECT_TRUE(kv.checkInvariants().isOk());
}

TEST(RuntimeKVCacheManager, FailedAllocationChangesNothing) {
  KVCacheManager kv(config(5)); // 4 usable blocks.
  ASSERT_TRUE(kv.allocateSlots("a", 0, 12));
  EXPECT_FALSE(kv.allocateSlots("b", 0, 8));
  EXPECT_TRUE(kv.blockIds("b").empty());
  EXPECT_EQ(kv.numFreeBlocks(), 1u);
  EXPECT_FALSE(kv.allocateSlots("a", 12, 5));
  EXPECT_EQ(kv.blockIds("a").size(), 3u);
  EXPECT_EQ(kv.numFreeBlocks(), 1u);
  EXPECT_TRUE(kv.checkInvariants().isOk());
  EXPECT_TRUE(kv.allocateSlots("a", 12, 4));
}

TEST(RuntimeKVCacheManager, PrefixHitNeverCoversTheLastToken) {
  KVCacheManager kv(config(16));
  std::vector<TokenId> prompt = iota(8); // Exactly two blocks.
  prefill(kv, "a", prompt);
  ComputedBlocks hit = kv.findCachedPrefix("b", prompt, 0);
  // The last token's logits are needed, so its block is recomputed.
  EXPECT_EQ(hit.numTokens, 4u);
  ASSERT_EQ(hit.blockIds.size(), 1u);
  EXPECT_EQ(hit.blockIds[0], kv.blockIds("a")[0]);

  std::vector<TokenId> longer = iota(9);
  hit = kv.findCachedPrefix("c", longer, 0);
  EXPECT_EQ(hit.numTokens, 8u);
  EXPECT_EQ(hit.blockIds, kv.blockIds("a"));
}

TEST(RuntimeKVCacheManager, PrefixMissesOnDifferentTokensOrSalt) {
  KVCacheManager kv(config(16));
  prefill(kv, "a", iota(9));
  std::vector<TokenId> divergent = iota(9);
  divergent[5] = 100; // Second block differs.
  EXPECT_EQ(kv.findCachedPrefix("b", divergent, 0).numTokens, 4u);
  divergent[0] = 100; // First block differs: nothing after it can match.
  EXPECT_EQ(kv.findCachedPrefix("c", divergent, 0).numTokens, 0u);
  EXPECT_EQ(kv.findCachedPrefix("d", iota(9), /*extraKey=*/7).numTokens, 0u);
  EXPECT_GT(kv.numPrefixQueryTokens(), kv.numPrefixHitTokens());
}

TEST(RuntimeKVCacheManager, BlocksAreCachedOnlyOnceComputed) {
  KVCacheManager kv(config(16));
  std::vector<TokenId> prompt = iota(9);
  ASSERT_TRUE(kv.allocateSlots("a", 0, 9));
  // Scheduled but not yet computed: sharing it would read garbage KV.
  EXPECT_EQ(kv.findCachedPrefix("b", prompt, 0).numTokens, 0u);
  kv.cacheComputedBlocks("a", prompt, 5, 0);
  EXPECT_EQ(kv.findCachedPrefix("b", prompt, 0).numTokens, 4u);
  kv.cacheComputedBlocks("a", prompt, 9, 0);
  EXPECT_EQ(kv.findCachedPrefix("b", prompt, 0).numTokens, 8u);
}

TEST(RuntimeKVCacheManager, HitSharesBlocksAndCountsReferences) {
  KVCacheManager kv(config(16));
  std::vector<TokenId> prompt = iota(10);
  prefill(kv, "a", prompt);
  prefill(kv, "b", prompt);
  const std::vector<BlockId> &a = kv.blockIds("a");
  const std::vector<BlockId> &b = kv.blockIds("b");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]); // The partial tail is private.
  EXPECT_EQ(kv.pool().block(a[0]).refCount, 2);
  EXPECT_TRUE(kv.checkInvariants().isOk());
  kv.freeRequest("a");
  EXPECT_EQ(kv.pool().block(b[0]).refCount, 1);
  EXPECT_TRUE(kv.checkInvariants().isOk());
}

TEST(RuntimeKVCacheManager, FreedTailsAreEvictedBeforePrefixes) {
  KVCacheManager kv(config(7)); // 6 usable blocks.
  prefill(kv, "a", iota(12));   // Blocks 1, 2, 3, all cached.
  kv.freeRequest("a");
  EXPECT_EQ(kv.pool().numCachedBlocks(), 3u);
  // 3 never-used blocks go first, then a's tail, then its middle.
  ASSERT_TRUE(kv.allocateSlots("x", 0, 16));
  EXPECT_EQ(kv.findCachedPrefix("b", iota(13), 0).numTokens, 8u);
  ASSERT_TRUE(kv.allocateSlots("y", 0, 4));
  EXPECT_EQ(kv.findCachedPrefix("c", iota(13), 0).numTokens, 4u);
  EXPECT_TRUE(kv.checkInvariants().isOk());
}

TEST(RuntimeKVCacheManager, HitRevivesAFreeCachedBlock) {
  KVCacheManager kv(config(4)); // 3 usable blocks.
  prefill(kv, "a", iota(8));
  kv.freeRequest("a");
  ComputedBlocks hit = kv.findCachedPrefix("b", iota(9), 0);
  ASSERT_EQ(hit.numTokens, 8u);
  // Adopting 2 free cached blocks and allocating 1 new one uses all 3.
  ASSERT_TRUE(kv.allocateSlots("b", 8, 1, hit));
  EXPECT_EQ(kv.numFreeBlocks(), 0u);
  EXPECT_TRUE(kv.checkInvariants().isOk());
  kv.freeRequest("b");
  // Now the revived blocks would not fit next to 2 new ones.
  hit = kv.findCachedPrefix("c", iota(9), 0);
  EXPECT_FALSE(kv.allocateSlots("c", 8, 9, hit));
  EXPECT_EQ(kv.numFreeBlocks(), 3u);
  EXPECT_TRUE(kv.checkInvariants().isOk());
}

TEST(RuntimeKVCacheManager, SharedPrefixForParallelSamples) {
  KVCacheManager kv(config(16, /*caching=*/false));
  ASSERT_TRUE(kv.allocateSlots("s0", 0, 10));
  ComputedBlocks shared = kv.sharedPrefixOf("s0", 9);
  EXPECT_EQ(shared.numTokens, 8u);
  ASSERT_TRUE(kv.allocateSlots("s1", 8, 2, shared));
  EXPECT_EQ(kv.pool().block(kv.blockIds("s0")[0]).refCount, 2);
  EXPECT_EQ(kv.pool().block(kv.blockIds("s0")[2]).refCount, 1);
  EXPECT_TRUE(kv.checkInvariants().isOk());
  kv.freeRequest("s0");
  kv.freeRequest("s1");
  kv.freeRequest("unknown");
  EXPECT_EQ(kv.numFreeBlocks(), 15u);
  EXPECT_TRUE(kv.checkInvariants().isOk());
}

TEST(RuntimeKVCacheManager, LookaheadReservesSlots) {
  KVCacheManager kv(config(8));
  auto blocks = kv.allocateSlots("a", 0, 3, {}, /*numLookaheadTokens=*/3);
  ASSERT_TRUE(blocks);
  EXPECT_EQ(blocks->size(), 2u);
}

} // namespace
