//===- KVCacheManager.h - Per-request block tables -------------*- C++ -*-===//
//
// Sits between the scheduler and the block pool: keeps each request's block
// table (append-only, so the executor can ship diffs), decides which full
// blocks enter the prefix cache, and answers "how much of this prompt is
// already computed". It speaks block ids and token counts only; the KV
// tensors are the executor's business.
//
// The manager does not track how many tokens a request has computed: that
// is scheduler state, passed in where needed.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_KVCACHE_KVCACHEMANAGER_H
#define FOLIO_RUNTIME_KVCACHE_KVCACHEMANAGER_H

#include "runtime/KVCache/BlockPool.h"
#include "runtime/Support/Status.h"
#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace folio {

struct KVCacheConfig {
  /// Blocks in the pool, the null block included.
  size_t numBlocks = 0;
  /// Tokens per block.
  size_t blockSize = 16;
  bool enablePrefixCaching = true;

  /// Rejects configurations the manager cannot work with.
  Status validate() const;
};

/// Blocks a request can take over instead of computing their tokens.
struct ComputedBlocks {
  std::vector<BlockId> blockIds;
  /// Tokens they cover: blockIds.size() * blockSize.
  size_t numTokens = 0;
};

class KVCacheManager {
public:
  /// Precondition: `config.validate()` succeeded.
  explicit KVCacheManager(const KVCacheConfig &config);

  size_t blockSize() const { return blockSize_; }
  const BlockPool &pool() const { return pool_; }
  size_t numFreeBlocks() const { return pool_.numFreeBlocks(); }
  /// Blocks needed to hold `numTokens` tokens.
  size_t blocksForTokens(size_t numTokens) const {
    return (numTokens + blockSize_ - 1) / blockSize_;
  }

  /// The longest cached run of full blocks that prefixes `tokens`. Never
  /// covers the last token: its logits are needed, so it must be computed.
  /// No side effects on the pool; pass the result to `allocateSlots`.
  ComputedBlocks findCachedPrefix(const RequestId &id,
                                  const std::vector<TokenId> &tokens,
                                  uint64_t extraKey);

  /// The first blocks of `source`'s table that are full within its first
  /// `numTokens` tokens: how parallel samples share their prompt.
  /// Precondition: `source` holds those blocks.
  ComputedBlocks sharedPrefixOf(const RequestId &source,
                                size_t numTokens) const;

  /// Grows `id`'s block table to hold `numComputedTokens + numNewTokens +
  /// numLookaheadTokens` tokens, first adopting `computed` (only for a
  /// request holding no blocks yet; then `numComputedTokens` must equal
  /// `computed.numTokens`). Returns the newly allocated block ids, or
  /// nullopt, with nothing changed, when the pool cannot supply them.
  std::optional<std::vector<BlockId>>
  allocateSlots(const RequestId &id, size_t numComputedTokens,
                size_t numNewTokens, const ComputedBlocks &computed = {},
                size_t numLookaheadTokens = 0);

  /// Enters `id`'s full blocks within its first `numComputedTokens` tokens
  /// into the prefix cache. Call it only once their KV has been written
  /// (after the forward that computed them), so that no request ever adopts
  /// a block whose KV is still being produced. `tokens` are the request's
  /// known tokens (prompt and output, never speculative ones).
  void cacheComputedBlocks(const RequestId &id,
                           const std::vector<TokenId> &tokens,
                           size_t numComputedTokens, uint64_t extraKey);

  /// Returns all of `id`'s blocks to the pool and forgets the request. The
  /// table's tail is released first so that it is evicted before the
  /// prefix, which other requests are more likely to share.
  /// Unknown ids are ignored (a request may be freed before allocation).
  void freeRequest(const RequestId &id);

  /// `id`'s block table; empty for unknown requests.
  const std::vector<BlockId> &blockIds(const RequestId &id) const;
  size_t numRequests() const { return requests_.size(); }

  /// Drops all cached hashes; false while any block is held.
  bool resetPrefixCache() { return pool_.resetPrefixCache(); }

  /// Tokens looked up in, and found in, the prefix cache so far (a request
  /// blocked at the head of the queue counts once per attempt).
  uint64_t numPrefixQueryTokens() const { return numQueryTokens_; }
  uint64_t numPrefixHitTokens() const { return numHitTokens_; }

  /// Checks that every block's reference count equals the number of block
  /// tables holding it, no table holds the null block or a block twice,
  /// and the pool's own invariants.
  Status checkInvariants() const;

private:
  struct RequestBlocks {
    std::vector<BlockId> table;
    /// Hashes of the request's full blocks computed so far.
    std::vector<BlockHash> hashes;
    /// Leading blocks of `table` already considered for caching.
    size_t numCachedBlocks = 0;
  };

  size_t blockSize_;
  BlockPool pool_;
  /// Requests that looked up the prefix cache or hold blocks.
  std::unordered_map<RequestId, RequestBlocks> requests_;
  uint64_t numQueryTokens_ = 0;
  uint64_t numHitTokens_ = 0;
};

} // namespace folio

#endif // FOLIO_RUNTIME_KVCACHE_KVCACHEMANAGER_H
