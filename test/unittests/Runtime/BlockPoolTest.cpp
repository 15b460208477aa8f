//===- BlockPoolTest.cpp - Reference counts, LRU and the hash map ---------===//

#include "runtime/KVCache/BlockPool.h"

#include <gtest/gtest.h>

using namespace folio;

namespace {

BlockHash hashOf(uint64_t n) {
  TokenId token = static_cast<TokenId>(n);
  return hashBlockTokens(rootBlockHash(), &token, 1, 0);
}

TEST(RuntimeBlockPool, NeverHandsOutTheNullBlock) {
  BlockPool pool(5, /*enablePrefixCaching=*/true);
  EXPECT_EQ(pool.numUsableBlocks(), 4u);
  EXPECT_EQ(pool.numFreeBlocks(), 4u);
  std::vector<BlockId> ids = pool.allocate(4);
  EXPECT_EQ(ids, (std::vector<BlockId>{1, 2, 3, 4}));
  EXPECT_EQ(pool.numFreeBlocks(), 0u);
  EXPECT_DOUBLE_EQ(pool.usage(), 1.0);
  EXPECT_TRUE(pool.checkInvariants().isOk());
  pool.release(ids);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.0);
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(RuntimeBlockPool, ReleasedBlocksAreReusedInReleaseOrder) {
  BlockPool pool(6, /*enablePrefixCaching=*/false);
  EXPECT_EQ(pool.allocate(5), (std::vector<BlockId>{1, 2, 3, 4, 5}));
  pool.release({4, 2});
  pool.release({5});
  // Never-used blocks are gone; freed ones come back oldest release first.
  EXPECT_EQ(pool.allocate(3), (std::vector<BlockId>{4, 2, 5}));
}

TEST(RuntimeBlockPool, SharedBlocksReturnWhenTheLastHolderLetsGo) {
  BlockPool pool(3, /*enablePrefixCaching=*/false);
  BlockId id = pool.allocate(1)[0];
  pool.retain(id);
  EXPECT_EQ(pool.block(id).refCount, 2);
  pool.release({id});
  EXPECT_EQ(pool.numFreeBlocks(), 1u);
  pool.release({id});
  EXPECT_EQ(pool.numFreeBlocks(), 2u);
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(RuntimeBlockPool, CachedBlocksStayFindableUntilEvictedInLruOrder) {
  BlockPool pool(4, /*enablePrefixCaching=*/true);
  std::vector<BlockId> ids = pool.allocate(3); // 1, 2, 3
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(pool.cacheBlock(ids[i], hashOf(i)));
  pool.release({2, 1, 3});
  EXPECT_EQ(pool.numFreeBlocks(), 3u);
  EXPECT_EQ(pool.numCachedBlocks(), 3u);
  EXPECT_EQ(pool.lookup(hashOf(0)), std::optional<BlockId>(1));

  // A hit revives block 1 from the middle of the queue.
  pool.retain(1);
  EXPECT_EQ(pool.numFreeBlocks(), 2u);
  EXPECT_TRUE(pool.checkInvariants().isOk());

  // Allocation evicts the least recently freed cached block first.
  EXPECT_EQ(pool.allocate(1), (std::vector<BlockId>{2}));
  EXPECT_FALSE(pool.lookup(hashOf(1)));
  EXPECT_EQ(pool.numEvictions(), 1u);
  EXPECT_EQ(pool.lookup(hashOf(2)), std::optional<BlockId>(3));
  EXPECT_EQ(pool.lookup(hashOf(0)), std::optional<BlockId>(1));
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(RuntimeBlockPool, SecondBlockWithTheSameHashStaysUncached) {
  BlockPool pool(3, /*enablePrefixCaching=*/true);
  std::vector<BlockId> ids = pool.allocate(2);
  EXPECT_TRUE(pool.cacheBlock(ids[0], hashOf(7)));
  EXPECT_FALSE(pool.cacheBlock(ids[1], hashOf(7)));
  EXPECT_FALSE(pool.block(ids[1]).hasHash);
  EXPECT_EQ(pool.lookup(hashOf(7)), std::optional<BlockId>(ids[0]));
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(RuntimeBlockPool, ResetPrefixCacheOnlyWhenNothingIsHeld) {
  BlockPool pool(3, /*enablePrefixCaching=*/true);
  std::vector<BlockId> ids = pool.allocate(1);
  EXPECT_TRUE(pool.cacheBlock(ids[0], hashOf(1)));
  EXPECT_FALSE(pool.resetPrefixCache());
  EXPECT_EQ(pool.numCachedBlocks(), 1u);
  pool.release(ids);
  EXPECT_TRUE(pool.resetPrefixCache());
  EXPECT_EQ(pool.numCachedBlocks(), 0u);
  EXPECT_FALSE(pool.lookup(hashOf(1)));
  EXPECT_TRUE(pool.checkInvariants().isOk());
}

TEST(RuntimeBlockHash, DependsOnParentTokensAndExtraKey) {
  std::vector<TokenId> a = {1, 2, 3, 4};
  BlockHash h = hashBlockTokens(rootBlockHash(), a.data(), 4, 0);
  EXPECT_EQ(h, hashBlockTokens(rootBlockHash(), a.data(), 4, 0));
  EXPECT_NE(h, hashBlockTokens(rootBlockHash(), a.data(), 4, 1));
  EXPECT_NE(h, hashBlockTokens(h, a.data(), 4, 0));
  std::vector<TokenId> b = {1, 2, 3, 5};
  EXPECT_NE(h, hashBlockTokens(rootBlockHash(), b.data(), 4, 0));

  std::vector<BlockHash> chain;
  std::vector<TokenId> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  extendBlockHashes(chain, tokens, 4, 0);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0], h);
  EXPECT_EQ(chain[1], hashBlockTokens(h, tokens.data() + 4, 4, 0));
}

} // namespace
