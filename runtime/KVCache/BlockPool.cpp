//===- BlockPool.cpp - Ref-counted KV blocks with a prefix cache ----------===//

#include "runtime/KVCache/BlockPool.h"

#include <cassert>
#include <string>

using namespace folio;

namespace {

std::unique_ptr<KVCacheBlock[]> makeBlocks(size_t numBlocks) {
  assert(numBlocks >= 2 && "a pool needs the null block and one more");
  auto storage = std::make_unique<KVCacheBlock[]>(numBlocks);
  for (size_t i = 0; i < numBlocks; ++i)
    storage[i].blockId = static_cast<BlockId>(i);
  return storage;
}

std::vector<KVCacheBlock *> pointers(KVCacheBlock *storage, size_t count) {
  std::vector<KVCacheBlock *> result;
  result.reserve(count);
  for (size_t i = 0; i < count; ++i)
    result.push_back(&storage[i]);
  return result;
}

std::vector<KVCacheBlock *> withoutNull(std::vector<KVCacheBlock *> blocks) {
  blocks.erase(blocks.begin());
  return blocks;
}

} // namespace

BlockPool::BlockPool(size_t numBlocks, bool enablePrefixCaching)
    : enablePrefixCaching_(enablePrefixCaching),
      storage_(makeBlocks(numBlocks)),
      blocks_(pointers(storage_.get(), numBlocks)),
      freeQueue_(withoutNull(blocks_)) {
  // Held forever by nobody in particular, so it can never reach the queue.
  blocks_[kNullBlockId]->refCount = 1;
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(numFreeBlocks()) /
                   static_cast<double>(numUsableBlocks());
}

KVCacheBlock &BlockPool::mutableBlock(BlockId id) {
  assert(id >= 0 && static_cast<size_t>(id) < blocks_.size() &&
         "block id out of range");
  return *blocks_[id];
}

const KVCacheBlock &BlockPool::block(BlockId id) const {
  assert(id >= 0 && static_cast<size_t>(id) < blocks_.size() &&
         "block id out of range");
  return *blocks_[id];
}

void BlockPool::evict(KVCacheBlock &block) {
  auto it = cached_.find(block.hash);
  assert(it != cached_.end() && it->second == block.blockId &&
         "cached block missing from the hash map");
  cached_.erase(it);
  block.hasHash = false;
  block.hash = BlockHash();
  ++numEvictions_;
}

std::vector<BlockId> BlockPool::allocate(size_t count) {
  assert(count <= numFreeBlocks() && "not enough free blocks; check first");
  std::vector<BlockId> ids;
  ids.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    KVCacheBlock *block = freeQueue_.popFront();
    assert(block->refCount == 0 && "a queued block must be unheld");
    if (block->hasHash)
      evict(*block);
    block->refCount = 1;
    ids.push_back(block->blockId);
  }
  return ids;
}

std::optional<BlockId> BlockPool::lookup(const BlockHash &hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end())
    return std::nullopt;
  return it->second;
}

void BlockPool::retain(BlockId id) {
  assert(id != kNullBlockId && "the null block is not reference counted");
  KVCacheBlock &block = mutableBlock(id);
  if (block.refCount == 0)
    freeQueue_.remove(&block);
  ++block.refCount;
}

void BlockPool::release(const std::vector<BlockId> &ids) {
  for (BlockId id : ids) {
    assert(id != kNullBlockId && "the null block is not reference counted");
    KVCacheBlock &block = mutableBlock(id);
    assert(block.refCount > 0 && "double free of a KV block");
    if (--block.refCount == 0)
      freeQueue_.pushBack(&block);
  }
}

bool BlockPool::cacheBlock(BlockId id, const BlockHash &hash) {
  assert(enablePrefixCaching_ && "prefix caching is disabled");
  KVCacheBlock &block = mutableBlock(id);
  assert(id != kNullBlockId && block.refCount > 0 && !block.hasHash &&
         "only held, uncached blocks can be cached");
  if (!cached_.emplace(hash, id).second)
    return false;
  block.hasHash = true;
  block.hash = hash;
  return true;
}

bool BlockPool::resetPrefixCache() {
  if (numFreeBlocks() != numUsableBlocks())
    return false;
  for (auto &entry : cached_) {
    KVCacheBlock &block = mutableBlock(entry.second);
    block.hasHash = false;
    block.hash = BlockHash();
  }
  cached_.clear();
  return true;
}

Status BlockPool::checkInvariants() const {
  auto fail = [](BlockId id, const std::string &what) {
    return Status::internal("block " + std::to_string(id) + ": " + what);
  };
  const KVCacheBlock &null = *blocks_[kNullBlockId];
  if (null.refCount != 1 || FreeBlockQueue::isQueued(null) || null.hasHash)
    return fail(kNullBlockId, "the null block was handed out or cached");

  size_t numHeld = 0, numHashed = 0;
  for (size_t i = 1; i < blocks_.size(); ++i) {
    const KVCacheBlock &block = *blocks_[i];
    if (block.refCount < 0)
      return fail(block.blockId, "negative reference count");
    if ((block.refCount == 0) != FreeBlockQueue::isQueued(block))
      return fail(block.blockId, "queued iff unheld is violated");
    numHeld += block.refCount > 0;
    if (block.hasHash) {
      ++numHashed;
      auto it = cached_.find(block.hash);
      if (it == cached_.end() || it->second != block.blockId)
        return fail(block.blockId, "hash not mapped back to the block");
    }
  }
  if (numHashed != cached_.size())
    return Status::internal("hash map has entries for uncached blocks");
  if (freeQueue_.size() + numHeld != numUsableBlocks())
    return Status::internal("free queue length + held blocks != usable");
  std::vector<const KVCacheBlock *> queued = freeQueue_.blocks();
  if (queued.size() != freeQueue_.size())
    return Status::internal("free queue links disagree with its size");
  return Status::ok();
}
