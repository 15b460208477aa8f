//===- KVCachePropertyTest.cpp - Random operations on the KV manager ------===//
//
// Thousands of random admissions (with shared prefixes, so the prefix cache
// hits), growth, parallel-sample sharing and frees, with the invariants
// checked after every operation. A shadow copy of the KV content (which
// token each slot holds) proves that every adopted block really holds the
// adopting request's tokens, however blocks were evicted and reused.
//
//===----------------------------------------------------------------------===//

#include "runtime/KVCache/KVCacheManager.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace folio;

namespace {

struct Shadow {
  std::vector<TokenId> tokens;
  size_t numComputed = 0;
};

class KVCacheFuzzer {
public:
  KVCacheFuzzer(uint32_t seed, bool caching)
      : rng_(seed), kv_(makeConfig(caching)),
        content_(kNumBlocks * kBlockSize, -1) {
    for (int i = 0; i < 4; ++i)
      prefixes_.push_back(randomTokens(4 + rng_() % 20));
  }

  void run(int numOps) {
    for (int op = 0; op < numOps; ++op) {
      switch (rng_() % 6) {
      case 0:
      case 1:
        admit();
        break;
      case 2:
      case 3:
        grow();
        break;
      case 4:
        share();
        break;
      case 5:
        release();
        break;
      }
      if (::testing::Test::HasFatalFailure())
        return;
      Status status = kv_.checkInvariants();
      ASSERT_TRUE(status.isOk()) << "op " << op << ": " << status.message();
      ASSERT_EQ(kv_.numFreeBlocks() + heldBlocks(),
                kv_.pool().numUsableBlocks());
    }
    for (auto &entry : requests_)
      kv_.freeRequest(entry.first);
    requests_.clear();
    ASSERT_TRUE(kv_.checkInvariants().isOk());
    EXPECT_EQ(kv_.numFreeBlocks(), kv_.pool().numUsableBlocks());
    if (kv_.pool().prefixCachingEnabled()) {
      EXPECT_GT(numHitBlocks_, 0u);
    }
    EXPECT_GT(numFailures_, 0u) << "memory pressure was never reached";
  }

private:
  static constexpr size_t kNumBlocks = 40;
  static constexpr size_t kBlockSize = 4;

  static KVCacheConfig makeConfig(bool caching) {
    KVCacheConfig config;
    config.numBlocks = kNumBlocks;
    config.blockSize = kBlockSize;
    config.enablePrefixCaching = caching;
    return config;
  }

  std::vector<TokenId> randomTokens(size_t n) {
    std::vector<TokenId> tokens(n);
    for (TokenId &t : tokens)
      t = static_cast<TokenId>(rng_() % 8);
    return tokens;
  }

  size_t heldBlocks() const {
    size_t held = 0;
    for (size_t b = 1; b < kNumBlocks; ++b)
      held += kv_.pool().block(static_cast<BlockId>(b)).refCount > 0;
    return held;
  }

  /// "Computes" tokens [from, to) of `id`: writes them into their slots and
  /// offers the full blocks to the prefix cache.
  void compute(const RequestId &id, Shadow &shadow, size_t from, size_t to) {
    const std::vector<BlockId> &table = kv_.blockIds(id);
    for (size_t p = from; p < to; ++p)
      content_[table[p / kBlockSize] * kBlockSize + p % kBlockSize] =
          shadow.tokens[p];
    shadow.numComputed = to;
    kv_.cacheComputedBlocks(id, shadow.tokens, to, 0);
  }

  /// Every adopted slot must hold exactly the adopter's token.
  void checkAdopted(const RequestId &id, const Shadow &shadow,
                    const ComputedBlocks &computed) {
    for (size_t p = 0; p < computed.numTokens; ++p) {
      BlockId block = kv_.blockIds(id)[p / kBlockSize];
      ASSERT_EQ(content_[block * kBlockSize + p % kBlockSize], shadow.tokens[p])
          << id << " adopted block " << block << " with other content";
    }
  }

  void admit() {
    RequestId id = "r" + std::to_string(nextId_++);
    Shadow shadow;
    if (rng_() % 3 != 0)
      shadow.tokens = prefixes_[rng_() % prefixes_.size()];
    std::vector<TokenId> suffix = randomTokens(1 + rng_() % 12);
    shadow.tokens.insert(shadow.tokens.end(), suffix.begin(), suffix.end());
    ComputedBlocks hit = kv_.findCachedPrefix(id, shadow.tokens, 0);
    ASSERT_LT(hit.numTokens, shadow.tokens.size());
    size_t chunk = 1 + rng_() % (shadow.tokens.size() - hit.numTokens);
    attempt(id, shadow, hit, chunk);
  }

  void share() {
    if (requests_.empty())
      return;
    auto source = requests_.begin();
    std::advance(source, rng_() % requests_.size());
    Shadow shadow;
    shadow.tokens = source->second.tokens;
    shadow.tokens.push_back(static_cast<TokenId>(rng_() % 8));
    size_t shareable = source->second.numComputed / kBlockSize * kBlockSize;
    ComputedBlocks shared = kv_.sharedPrefixOf(source->first, shareable);
    RequestId id = "r" + std::to_string(nextId_++);
    attempt(id, shadow, shared, shadow.tokens.size() - shared.numTokens);
  }

  void attempt(const RequestId &id, Shadow &shadow,
               const ComputedBlocks &computed, size_t numNew) {
    size_t freeBefore = kv_.numFreeBlocks();
    auto blocks = kv_.allocateSlots(id, computed.numTokens, numNew, computed);
    if (!blocks) {
      ++numFailures_;
      ASSERT_EQ(kv_.numFreeBlocks(), freeBefore);
      ASSERT_TRUE(kv_.blockIds(id).empty());
      kv_.freeRequest(id); // Drops the lookup state.
      return;
    }
    numHitBlocks_ += computed.blockIds.size();
    checkAdopted(id, shadow, computed);
    compute(id, shadow, computed.numTokens, computed.numTokens + numNew);
    requests_[id] = shadow;
  }

  void grow() {
    if (requests_.empty())
      return;
    auto it = requests_.begin();
    std::advance(it, rng_() % requests_.size());
    Shadow &shadow = it->second;
    // Decode: the last computed token produced a new one.
    if (shadow.numComputed == shadow.tokens.size())
      shadow.tokens.push_back(static_cast<TokenId>(rng_() % 8));
    size_t gap = shadow.tokens.size() - shadow.numComputed;
    size_t numNew = 1 + rng_() % gap;
    size_t before = kv_.blockIds(it->first).size();
    if (!kv_.allocateSlots(it->first, shadow.numComputed, numNew)) {
      ++numFailures_;
      ASSERT_EQ(kv_.blockIds(it->first).size(), before);
      return;
    }
    compute(it->first, shadow, shadow.numComputed, shadow.numComputed + numNew);
  }

  void release() {
    if (requests_.empty())
      return;
    auto it = requests_.begin();
    std::advance(it, rng_() % requests_.size());
    kv_.freeRequest(it->first);
    ASSERT_TRUE(kv_.blockIds(it->first).empty());
    requests_.erase(it);
  }

  std::mt19937 rng_;
  KVCacheManager kv_;
  std::vector<TokenId> content_;
  std::vector<std::vector<TokenId>> prefixes_;
  std::map<RequestId, Shadow> requests_;
  size_t nextId_ = 0;
  size_t numHitBlocks_ = 0;
  size_t numFailures_ = 0;
};

TEST(RuntimeKVCacheProperty, RandomOpsWithPrefixCaching) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    KVCacheFuzzer(seed, /*caching=*/true).run(3000);
  }
}

TEST(RuntimeKVCacheProperty, RandomOpsWithoutPrefixCaching) {
  for (uint32_t seed : {5u, 6u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    KVCacheFuzzer(seed, /*caching=*/false).run(3000);
  }
}

} // namespace
