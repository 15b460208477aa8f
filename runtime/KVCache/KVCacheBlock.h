//===- KVCacheBlock.h - Metadata of one KV block ---------------*- C++ -*-===//

#ifndef FOLIO_RUNTIME_KVCACHE_KVCACHEBLOCK_H
#define FOLIO_RUNTIME_KVCACHE_KVCACHEBLOCK_H

#include "runtime/KVCache/BlockHash.h"
#include "runtime/Support/Types.h"

#include <cstdint>

namespace folio {

/// Bookkeeping for one block of the pool; the KV tensors themselves live in
/// the executor and are addressed by `blockId`.
///
/// The free-list links are intrusive so that a prefix-cache hit can pull a
/// block out of the middle of the free queue in O(1).
struct KVCacheBlock {
  BlockId blockId = kNullBlockId;
  /// Number of block tables holding this block. Zero means the block is in
  /// the free queue (possibly still cached and reusable by hash).
  int32_t refCount = 0;
  /// Set once the block is full and registered in the prefix cache.
  bool hasHash = false;
  BlockHash hash;

  /// Free-queue links; both null exactly when the block is not queued.
  KVCacheBlock *prevFree = nullptr;
  KVCacheBlock *nextFree = nullptr;
};

} // namespace folio

#endif // FOLIO_RUNTIME_KVCACHE_KVCACHEBLOCK_H
