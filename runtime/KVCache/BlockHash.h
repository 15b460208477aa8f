//===- BlockHash.h - Content hashes of full KV blocks ----------*- C++ -*-===//
//
// A full block's KV depends on every token before it, so its identity is a
// hash chain: hash(parent block's hash, this block's token ids, extra key).
// Two blocks with equal hashes hold interchangeable KV, which is what makes
// prefix caching safe across requests.
//
// The hash is 128 bits: a false match silently corrupts another request's
// output, and 128 bits put accidental collisions out of reach even with
// millions of cached blocks. It is not cryptographic; tenants that must not
// share KV use distinct extra keys (a cache salt).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_KVCACHE_BLOCKHASH_H
#define FOLIO_RUNTIME_KVCACHE_BLOCKHASH_H

#include "runtime/Support/Types.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace folio {

/// The 128-bit identity of a full block's content and its whole prefix.
struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;

  friend bool operator==(const BlockHash &a, const BlockHash &b) {
    return a.lo == b.lo && a.hi == b.hi;
  }
  friend bool operator!=(const BlockHash &a, const BlockHash &b) {
    return !(a == b);
  }
};

/// The parent hash of a sequence's first block.
BlockHash rootBlockHash();

/// Hash of one block: `tokens[0, count)` following a block hashed `parent`.
/// `extraKey` separates caches that must not share blocks (adapters, salts).
BlockHash hashBlockTokens(const BlockHash &parent, const TokenId *tokens,
                          size_t count, uint64_t extraKey);

/// Extends `hashes` (the chain of `tokens`' full blocks computed so far) to
/// cover every full block of `tokens`. Incremental, so a decoding request
/// hashes each block once.
void extendBlockHashes(std::vector<BlockHash> &hashes,
                       const std::vector<TokenId> &tokens, size_t blockSize,
                       uint64_t extraKey);

} // namespace folio

template <> struct std::hash<folio::BlockHash> {
  size_t operator()(const folio::BlockHash &h) const {
    // Both halves are already well mixed.
    return static_cast<size_t>(h.lo);
  }
};

#endif // FOLIO_RUNTIME_KVCACHE_BLOCKHASH_H
