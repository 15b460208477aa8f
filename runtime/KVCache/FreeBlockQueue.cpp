//===- FreeBlockQueue.cpp - LRU queue of free KV blocks -------------------===//

#include "runtime/KVCache/FreeBlockQueue.h"

#include <cassert>

using namespace folio;

FreeBlockQueue::FreeBlockQueue(const std::vector<KVCacheBlock *> &blocks) {
  // Sentinels carry an impossible id so that a leaked sentinel is obvious.
  head_.blockId = tail_.blockId = -1;
  head_.nextFree = &tail_;
  tail_.prevFree = &head_;
  for (KVCacheBlock *block : blocks)
    pushBack(block);
}

KVCacheBlock *FreeBlockQueue::popFront() {
  assert(!empty() && "popFront on an empty free queue");
  KVCacheBlock *block = head_.nextFree;
  remove(block);
  return block;
}

void FreeBlockQueue::remove(KVCacheBlock *block) {
  assert(block != &head_ && block != &tail_ && "cannot remove a sentinel");
  assert(isQueued(*block) && "block is not in the free queue");
  block->prevFree->nextFree = block->nextFree;
  block->nextFree->prevFree = block->prevFree;
  block->prevFree = block->nextFree = nullptr;
  --size_;
}

void FreeBlockQueue::pushBack(KVCacheBlock *block) {
  assert(!isQueued(*block) && "block is already in a free queue");
  KVCacheBlock *last = tail_.prevFree;
  last->nextFree = block;
  block->prevFree = last;
  block->nextFree = &tail_;
  tail_.prevFree = block;
  ++size_;
}

std::vector<const KVCacheBlock *> FreeBlockQueue::blocks() const {
  std::vector<const KVCacheBlock *> result;
  result.reserve(size_);
  for (const KVCacheBlock *b = head_.nextFree; b != &tail_; b = b->nextFree)
    result.push_back(b);
  return result;
}
