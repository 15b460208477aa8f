//===- FreeBlockQueue.h - LRU queue of free KV blocks ----------*- C++ -*-===//
//
// The free queue is in eviction order: the front is the block to hand out
// (and, if cached, evict) next; freed blocks join at the back. A block that
// a prefix-cache hit revives is unlinked from wherever it sits.
//
// It is an intrusive doubly linked list with two sentinels rather than a
// std::list or deque: removal from the middle is O(1) without a side table
// of iterators, and the sentinels remove every empty/edge special case.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_KVCACHE_FREEBLOCKQUEUE_H
#define FOLIO_RUNTIME_KVCACHE_FREEBLOCKQUEUE_H

#include "runtime/KVCache/KVCacheBlock.h"

#include <cstddef>
#include <vector>

namespace folio {

class FreeBlockQueue {
public:
  /// Links `blocks` in the given order (front first).
  explicit FreeBlockQueue(const std::vector<KVCacheBlock *> &blocks);
  FreeBlockQueue(const FreeBlockQueue &) = delete;
  FreeBlockQueue &operator=(const FreeBlockQueue &) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Whether `block` is linked into a free queue.
  static bool isQueued(const KVCacheBlock &block) {
    return block.prevFree != nullptr;
  }

  /// Unlinks and returns the least recently freed block.
  /// Precondition: the queue is not empty.
  KVCacheBlock *popFront();

  /// Unlinks `block` from anywhere in the queue.
  /// Precondition: `block` is in this queue.
  void remove(KVCacheBlock *block);

  /// Links `block` as the most recently freed.
  /// Precondition: `block` is in no queue.
  void pushBack(KVCacheBlock *block);

  /// The queued blocks, front first (O(n); for checks and tests).
  std::vector<const KVCacheBlock *> blocks() const;

private:
  KVCacheBlock head_;
  KVCacheBlock tail_;
  size_t size_ = 0;
};

} // namespace folio

#endif // FOLIO_RUNTIME_KVCACHE_FREEBLOCKQUEUE_H
