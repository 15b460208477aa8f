//===- KVCacheManager.cpp - Per-request block tables ----------------------===//

#include "runtime/KVCache/KVCacheManager.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <string>

using namespace folio;

Status KVCacheConfig::validate() const {
  if (blockSize == 0)
    return Status::invalidArgument("block size must be positive");
  if (numBlocks < 2)
    return Status::invalidArgument(
        "the KV cache needs at least 2 blocks (block 0 is reserved), got " +
        std::to_string(numBlocks));
  if (numBlocks > static_cast<size_t>(INT32_MAX))
    return Status::invalidArgument("too many KV blocks for i32 block ids");
  return Status::ok();
}

KVCacheManager::KVCacheManager(const KVCacheConfig &config)
    : blockSize_(config.blockSize),
      pool_(config.numBlocks, config.enablePrefixCaching) {
  assert(config.validate().isOk() && "invalid KV cache config");
}

ComputedBlocks
KVCacheManager::findCachedPrefix(const RequestId &id,
                                 const std::vector<TokenId> &tokens,
                                 uint64_t extraKey) {
  ComputedBlocks result;
  if (!pool_.prefixCachingEnabled() || tokens.empty())
    return result;
  RequestBlocks &state = requests_[id];
  assert(state.table.empty() && "prefix lookup for a request with blocks");
  extendBlockHashes(state.hashes, tokens, blockSize_, extraKey);

  size_t maxBlocks = (tokens.size() - 1) / blockSize_;
  for (size_t i = 0; i < maxBlocks; ++i) {
    std::optional<BlockId> hit = pool_.lookup(state.hashes[i]);
    if (!hit)
      break;
    result.blockIds.push_back(*hit);
  }
  result.numTokens = result.blockIds.size() * blockSize_;
  numQueryTokens_ += tokens.size();
  numHitTokens_ += result.numTokens;
  return result;
}

ComputedBlocks KVCacheManager::sharedPrefixOf(const RequestId &source,
                                              size_t numTokens) const {
  const std::vector<BlockId> &table = blockIds(source);
  size_t count = numTokens / blockSize_;
  assert(count <= table.size() && "source does not hold those blocks");
  ComputedBlocks result;
  result.blockIds.assign(table.begin(), table.begin() + count);
  result.numTokens = count * blockSize_;
  return result;
}

std::optional<std::vector<BlockId>> KVCacheManager::allocateSlots(
    const RequestId &id, size_t numComputedTokens, size_t numNewTokens,
    const ComputedBlocks &computed, size_t numLookaheadTokens) {
  auto it = requests_.find(id);
  size_t numHeld = it == requests_.end() ? 0 : it->second.table.size();
  assert((computed.blockIds.empty() ||
          (numHeld == 0 && numComputedTokens == computed.numTokens)) &&
         "computed blocks are adopted only by requests without blocks");
  assert(computed.numTokens == computed.blockIds.size() * blockSize_ &&
         "computed blocks must be full");

  size_t numRequired =
      blocksForTokens(numComputedTokens + numNewTokens + numLookaheadTokens);
  size_t numHave = numHeld + computed.blockIds.size();
  size_t numNew = numRequired > numHave ? numRequired - numHave : 0;
  // Adopting an unheld cached block takes it out of the free queue too.
  size_t numRevived =
      std::count_if(computed.blockIds.begin(), computed.blockIds.end(),
                    [&](BlockId b) { return pool_.block(b).refCount == 0; });
  if (numNew + numRevived > pool_.numFreeBlocks())
    return std::nullopt;

  RequestBlocks &state = requests_[id];
  for (BlockId b : computed.blockIds) {
    pool_.retain(b);
    state.table.push_back(b);
  }
  // Adopted blocks are cached already (prefix hits) or cached by their
  // owner (shared samples), never by this request.
  state.numCachedBlocks =
      std::max(state.numCachedBlocks, computed.blockIds.size());
  std::vector<BlockId> fresh = pool_.allocate(numNew);
  state.table.insert(state.table.end(), fresh.begin(), fresh.end());
  return fresh;
}

void KVCacheManager::cacheComputedBlocks(const RequestId &id,
                                         const std::vector<TokenId> &tokens,
                                         size_t numComputedTokens,
                                         uint64_t extraKey) {
  if (!pool_.prefixCachingEnabled())
    return;
  auto it = requests_.find(id);
  assert(it != requests_.end() && "caching blocks of an unknown request");
  RequestBlocks &state = it->second;
  size_t numFull = std::min(numComputedTokens, tokens.size()) / blockSize_;
  if (numFull <= state.numCachedBlocks)
    return;
  extendBlockHashes(state.hashes, tokens, blockSize_, extraKey);
  assert(state.hashes.size() >= numFull && state.table.size() >= numFull);
  for (size_t i = state.numCachedBlocks; i < numFull; ++i) {
    const KVCacheBlock &block = pool_.block(state.table[i]);
    if (block.hasHash) {
      assert(block.hash == state.hashes[i] && "shared block, other content");
      continue;
    }
    pool_.cacheBlock(state.table[i], state.hashes[i]);
  }
  state.numCachedBlocks = numFull;
}

void KVCacheManager::freeRequest(const RequestId &id) {
  auto it = requests_.find(id);
  if (it == requests_.end())
    return;
  std::vector<BlockId> &table = it->second.table;
  std::reverse(table.begin(), table.end());
  pool_.release(table);
  requests_.erase(it);
}

const std::vector<BlockId> &
KVCacheManager::blockIds(const RequestId &id) const {
  static const std::vector<BlockId> kEmpty;
  auto it = requests_.find(id);
  return it == requests_.end() ? kEmpty : it->second.table;
}

Status KVCacheManager::checkInvariants() const {
  std::vector<int32_t> holders(pool_.numBlocks(), 0);
  // Which table last counted each block: catches a block held twice by one
  // table without a set per table.
  std::vector<size_t> lastTable(pool_.numBlocks(), SIZE_MAX);
  size_t tableIndex = 0;
  for (const auto &entry : requests_) {
    for (BlockId b : entry.second.table) {
      if (b <= kNullBlockId || static_cast<size_t>(b) >= pool_.numBlocks())
        return Status::internal("request " + entry.first +
                                " holds invalid block " + std::to_string(b));
      if (lastTable[b] == tableIndex)
        return Status::internal("request " + entry.first + " holds block " +
                                std::to_string(b) + " twice");
      lastTable[b] = tableIndex;
      ++holders[b];
    }
    ++tableIndex;
  }
  for (size_t b = 1; b < pool_.numBlocks(); ++b) {
    int32_t refCount = pool_.block(static_cast<BlockId>(b)).refCount;
    if (refCount != holders[b])
      return Status::internal(
          "block " + std::to_string(b) + " has reference count " +
          std::to_string(refCount) + " but " + std::to_string(holders[b]) +
          " block tables hold it");
  }
  return pool_.checkInvariants();
}
