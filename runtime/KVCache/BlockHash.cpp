//===- BlockHash.cpp - Content hashes of full KV blocks -------------------===//

#include "runtime/KVCache/BlockHash.h"

#include <cassert>

using namespace folio;

namespace {

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/// SplitMix64's finalizer: full avalanche, so nearby inputs (token ids
/// differing in one bit) land far apart.
uint64_t finalize(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x;
}

/// One lane of a two-lane multiply-rotate hash; the lanes use different
/// constants so that their outputs are independent.
struct Lane {
  uint64_t state;
  uint64_t mul;
  int rot;

  void add(uint64_t word) {
    state ^= word * mul;
    state = rotl(state, rot) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  }
};

} // namespace

BlockHash folio::rootBlockHash() {
  // Any fixed value works; a named constant keeps hashes reproducible
  // across processes, which tests and debugging rely on.
  return {0x6A09E667F3BCC908ULL, 0xBB67AE8584CAA73BULL};
}

BlockHash folio::hashBlockTokens(const BlockHash &parent, const TokenId *tokens,
                                 size_t count, uint64_t extraKey) {
  Lane a{0x3C6EF372FE94F82BULL, 0xC2B2AE3D27D4EB4FULL, 31};
  Lane b{0xA54FF53A5F1D36F1ULL, 0x165667B19E3779F9ULL, 27};
  for (Lane *lane : {&a, &b}) {
    lane->add(parent.lo);
    lane->add(parent.hi);
    lane->add(extraKey);
    lane->add(count);
    for (size_t i = 0; i < count; ++i)
      lane->add(static_cast<uint32_t>(tokens[i]));
  }
  return {finalize(a.state), finalize(b.state ^ a.state)};
}

void folio::extendBlockHashes(std::vector<BlockHash> &hashes,
                              const std::vector<TokenId> &tokens,
                              size_t blockSize, uint64_t extraKey) {
  assert(blockSize > 0 && "block size must be positive");
  size_t numFull = tokens.size() / blockSize;
  for (size_t i = hashes.size(); i < numFull; ++i) {
    BlockHash parent = i == 0 ? rootBlockHash() : hashes[i - 1];
    hashes.push_back(hashBlockTokens(parent, tokens.data() + i * blockSize,
                                     blockSize, extraKey));
  }
}
