//===- BlockPool.h - Ref-counted KV blocks with a prefix cache -*- C++ -*-===//
//
// The pool owns every block id. A block is either held (refCount > 0, by
// one or more block tables) or free (refCount == 0, in the LRU free queue).
// Free blocks may still be cached: their KV stays valid and findable by hash
// until the block is handed out again, so a cached prefix costs nothing
// until memory actually runs short, and then the least recently freed goes
// first.
//
// Block 0 is the null block: permanently held, never queued or cached.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_KVCACHE_BLOCKPOOL_H
#define FOLIO_RUNTIME_KVCACHE_BLOCKPOOL_H

#include "runtime/KVCache/BlockHash.h"
#include "runtime/KVCache/FreeBlockQueue.h"
#include "runtime/KVCache/KVCacheBlock.h"
#include "runtime/Support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace folio {

class BlockPool {
public:
  /// `numBlocks` counts the null block; at least 2.
  BlockPool(size_t numBlocks, bool enablePrefixCaching);
  BlockPool(const BlockPool &) = delete;
  BlockPool &operator=(const BlockPool &) = delete;

  /// All blocks, the null block included.
  size_t numBlocks() const { return blocks_.size(); }
  /// Blocks that can ever be handed out (all but the null block).
  size_t numUsableBlocks() const { return blocks_.size() - 1; }
  /// Blocks available to `allocate`, evictable cached ones included.
  size_t numFreeBlocks() const { return freeQueue_.size(); }
  /// Fraction of usable blocks held by some block table.
  double usage() const;
  bool prefixCachingEnabled() const { return enablePrefixCaching_; }

  /// Hands out `count` blocks from the front of the free queue with one
  /// reference each, evicting their cached content.
  /// Precondition: count <= numFreeBlocks().
  std::vector<BlockId> allocate(size_t count);

  /// The block caching `hash`, if any. No side effects: the caller decides
  /// whether to take it (with `retain`).
  std::optional<BlockId> lookup(const BlockHash &hash) const;

  /// Adds one reference to `id`, reviving it from the free queue if unheld.
  /// Precondition: `id` is not the null block.
  void retain(BlockId id);

  /// Drops one reference from each of `ids` in order. Blocks reaching zero
  /// join the back of the free queue in that order, so earlier ids are
  /// evicted first. Precondition: every block is held.
  void release(const std::vector<BlockId> &ids);

  /// Registers the full, held block `id` as caching `hash`. Returns false
  /// and leaves `id` uncached when another block already caches `hash`
  /// (two requests computed the same block at once): one copy suffices.
  /// Precondition: caching is enabled and `id` is held and not yet cached.
  bool cacheBlock(BlockId id, const BlockHash &hash);

  /// Forgets every cached hash. Returns false and changes nothing while any
  /// block is held, since held blocks' hashes are still being relied on.
  bool resetPrefixCache();

  const KVCacheBlock &block(BlockId id) const;
  size_t numCachedBlocks() const { return cached_.size(); }
  /// Cached blocks whose content was dropped to hand them out again.
  uint64_t numEvictions() const { return numEvictions_; }

  /// Checks the pool's own invariants: queued exactly when unheld, queue
  /// length plus held blocks equals usable blocks, the hash map and block
  /// hashes agree, the null block is untouched.
  Status checkInvariants() const;

private:
  KVCacheBlock &mutableBlock(BlockId id);
  void evict(KVCacheBlock &block);

  bool enablePrefixCaching_;
  // unique_ptr keeps the blocks at stable addresses for the intrusive list.
  std::unique_ptr<KVCacheBlock[]> storage_;
  std::vector<KVCacheBlock *> blocks_;
  FreeBlockQueue freeQueue_;
  std::unordered_map<BlockHash, BlockId> cached_;
  uint64_t numEvictions_ = 0;
};

} // namespace folio

#endif // FOLIO_RUNTIME_KVCACHE_BLOCKPOOL_H
