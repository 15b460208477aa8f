//===- BatchBuilderTest.cpp - The serving-contract arrays
//------------------===//

#include "runtime/Core/BatchBuilder.h"

#include <gtest/gtest.h>

using namespace folio;
using namespace folio::core;

namespace {

// A prefill of 5 tokens, a decode at position 17 (second block) and a
// chunk of 3 tokens after 4 computed ones, with block size 4: the arrays
// vLLM v1's GPU model runner builds for the same step.
TEST(BatchBuilder, MixedPrefillDecodeAndChunk) {
  std::vector<TokenId> a = {10, 11, 12, 13, 14};
  std::vector<TokenId> b(18, 7);
  b[17] = 99;
  std::vector<TokenId> c = {1, 2, 3, 4, 5, 6, 7};
  std::vector<BlockId> ta = {3, 8}, tb = {1, 2, 4, 5, 6}, tc = {9, 7};
  std::vector<ScheduledSequence> seqs = {
      {&a, 0, 5, &ta}, {&b, 17, 1, &tb}, {&c, 4, 3, &tc}};
  auto r = buildForwardBatch(seqs, 4);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->tokens, (std::vector<int32_t>{10, 11, 12, 13, 14, 99, 5, 6, 7}));
  EXPECT_EQ(r->positions, (std::vector<int32_t>{0, 1, 2, 3, 4, 17, 4, 5, 6}));
  EXPECT_EQ(r->queryStartLoc, (std::vector<int32_t>{0, 5, 6, 9}));
  EXPECT_EQ(r->seqLens, (std::vector<int32_t>{5, 18, 7}));
  EXPECT_EQ(r->maxBlocks, 5);
  EXPECT_EQ(r->blockTables, (std::vector<int32_t>{3, 8, 0, 0, 0, //
                                                  1, 2, 4, 5, 6, //
                                                  9, 7, 0, 0, 0}));
  EXPECT_EQ(r->slotMapping,
            (std::vector<int64_t>{12, 13, 14, 15, 32, 25, 28, 29, 30}));
  EXPECT_EQ(r->logitsIndices, (std::vector<int32_t>{4, 5, 8}));
}

TEST(BatchBuilder, UnfinishedChunkProducesNoLogitsRow) {
  std::vector<TokenId> a = {1, 2, 3, 4};
  std::vector<BlockId> t = {1};
  ScheduledSequence s{&a, 0, 2, &t};
  s.wantLogits = false;
  auto r = buildForwardBatch({s}, 16);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->logitsIndices.empty());
  EXPECT_EQ(r->slotMapping, (std::vector<int64_t>{16, 17}));
}

TEST(BatchBuilder, RejectsTablesTooShort) {
  std::vector<TokenId> a(9, 1);
  std::vector<BlockId> t = {1, 2};
  auto r = buildForwardBatch({{&a, 0, 9, &t}}, 4);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "sequence 0: its 2 blocks cannot hold 9 tokens");
}

TEST(BatchBuilder, RejectsTokensNotKnown) {
  std::vector<TokenId> a(3, 1);
  std::vector<BlockId> t = {1};
  auto r = buildForwardBatch({{&a, 2, 2, &t}}, 4);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "sequence 0: scheduled tokens [2, 4) are not among its 3 tokens");
  r = buildForwardBatch({{&a, 0, 1, &t}}, 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "block size must be positive");
}

} // namespace
