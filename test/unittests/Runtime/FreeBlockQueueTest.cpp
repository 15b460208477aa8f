//===- FreeBlockQueueTest.cpp - Intrusive LRU free list -------------------===//

#include "runtime/KVCache/FreeBlockQueue.h"

#include <gtest/gtest.h>

#include <memory>

using namespace folio;

namespace {

struct Blocks {
  explicit Blocks(size_t n) : storage(n) {
    for (size_t i = 0; i < n; ++i) {
      storage[i].blockId = static_cast<BlockId>(i);
      pointers.push_back(&storage[i]);
    }
  }
  std::vector<KVCacheBlock> storage;
  std::vector<KVCacheBlock *> pointers;
};

std::vector<BlockId> ids(const FreeBlockQueue &queue) {
  std::vector<BlockId> result;
  for (const KVCacheBlock *block : queue.blocks())
    result.push_back(block->blockId);
  return result;
}

TEST(RuntimeFreeBlockQueue, KeepsInsertionOrder) {
  Blocks blocks(4);
  FreeBlockQueue queue(blocks.pointers);
  EXPECT_EQ(queue.size(), 4u);
  EXPECT_EQ(ids(queue), (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(queue.popFront()->blockId, 0);
  EXPECT_FALSE(FreeBlockQueue::isQueued(blocks.storage[0]));
  queue.pushBack(&blocks.storage[0]);
  EXPECT_EQ(ids(queue), (std::vector<BlockId>{1, 2, 3, 0}));
}

TEST(RuntimeFreeBlockQueue, RemovesFromAnywhere) {
  Blocks blocks(5);
  FreeBlockQueue queue(blocks.pointers);
  queue.remove(&blocks.storage[2]); // Middle.
  queue.remove(&blocks.storage[0]); // Front.
  queue.remove(&blocks.storage[4]); // Back.
  EXPECT_EQ(ids(queue), (std::vector<BlockId>{1, 3}));
  EXPECT_EQ(queue.size(), 2u);
  queue.remove(&blocks.storage[1]);
  queue.remove(&blocks.storage[3]);
  EXPECT_TRUE(queue.empty());
  EXPECT_TRUE(ids(queue).empty());
  // The sentinels still link up after the list emptied.
  queue.pushBack(&blocks.storage[4]);
  queue.pushBack(&blocks.storage[2]);
  EXPECT_EQ(ids(queue), (std::vector<BlockId>{4, 2}));
  EXPECT_EQ(queue.popFront()->blockId, 4);
  EXPECT_EQ(queue.popFront()->blockId, 2);
  EXPECT_TRUE(queue.empty());
}

TEST(RuntimeFreeBlockQueue, StartsEmpty) {
  FreeBlockQueue queue({});
  EXPECT_TRUE(queue.empty());
  KVCacheBlock block;
  queue.pushBack(&block);
  EXPECT_TRUE(FreeBlockQueue::isQueued(block));
  EXPECT_EQ(queue.popFront(), &block);
}

} // namespace
