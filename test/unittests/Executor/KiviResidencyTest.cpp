//===- KiviResidencyTest.cpp - The full-precision window of int2 caches ---===//
//
// Which blocks of an int2 (KIVI) cache stay in full precision from step to
// step, and that the ones leaving the window are quantized with exactly the
// slots written to them.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/KiviResidency.h"

#include "codegen/CPU/KVQuant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace folio;
using namespace folio::exec;

namespace {

constexpr int64_t kBlocks = 12, kBlock = 4, kHeads = 2, kHeadDim = 8;
constexpr int64_t kResidual = 8; // two blocks

/// One int2 layer's pools.
struct Layer {
  cpu::KVCacheView view;
  std::vector<uint8_t> k, v, kp, vp;
  Layer() {
    view.numBlocks = kBlocks;
    view.blockSize = kBlock;
    view.numKvHeads = kHeads;
    view.headDim = kHeadDim;
    view.dtype = cpu::DType::I2;
    view.group = kHeadDim;
    view.residual = kResidual;
    allocate();
  }
  /// (Re)allocates the pools for the view's current geometry.
  void allocate() {
    k.assign(view.poolBytes(), 0);
    v.assign(view.poolBytes(), 0);
    kp.assign(view.kParamPoolBytes(), 0);
    vp.assign(view.vParamPoolBytes(), 0);
    view.k = k.data();
    view.v = v.data();
    view.kParams = kp.data();
    view.vParams = vp.data();
  }
};

/// A step: each sequence (its blocks, context length after the step, tokens
/// scheduled) writes its newest tokens.
struct Seq {
  std::vector<int32_t> blocks;
  int64_t len, scheduled;
};

ForwardBatch makeBatch(const std::vector<Seq> &seqs) {
  ForwardBatch b;
  b.maxBlocks = 0;
  for (const Seq &s : seqs)
    b.maxBlocks = std::max<int64_t>(b.maxBlocks, int64_t(s.blocks.size()));
  b.queryStartLoc.push_back(0);
  for (const Seq &s : seqs) {
    for (int64_t p = s.len - s.scheduled; p < s.len; ++p) {
      b.tokens.push_back(1);
      b.positions.push_back(int32_t(p));
      b.slotMapping.push_back(s.blocks[size_t(p / kBlock)] * kBlock +
                              p % kBlock);
    }
    b.queryStartLoc.push_back(int32_t(b.tokens.size()));
    b.seqLens.push_back(int32_t(s.len));
    for (int64_t i = 0; i < b.maxBlocks; ++i)
      b.blockTables.push_back(i < int64_t(s.blocks.size()) ? s.blocks[size_t(i)]
                                                           : 0);
  }
  b.logitsIndices.push_back(int32_t(b.tokens.size()) - 1);
  return b;
}

/// Writes random rows for the batch's slots as kv_write would.
void write(Layer &l, const ForwardBatch &b, std::mt19937 &rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> k(b.slotMapping.size() * kHeads * kHeadDim), v(k.size());
  for (float &x : k)
    x = n(rng);
  for (float &x : v)
    x = n(rng);
  ASSERT_TRUE(cpu::kvWrite(l.view, k.data(), kHeads * kHeadDim, v.data(),
                           kHeads * kHeadDim, b.slotMapping.data(),
                           int64_t(b.slotMapping.size()))
                  .ok());
}

} // namespace

TEST(KiviResidency, WindowAndWrittenBlocksStayResident) {
  Layer l;
  KiviResidency r;
  r.reset(kBlocks, kBlock, kResidual);
  std::mt19937 rng(1);
  Seq s{{1, 2, 3, 4}, 10, 10}; // prefill of 10 tokens: blocks 1, 2, 3
  ForwardBatch b = makeBatch({s});
  ASSERT_TRUE(r.prepare(b, {&l.view}));
  write(l, b, rng);
  for (int32_t blk : {1, 2, 3})
    EXPECT_GE(r.entryOf(blk), 0) << blk;
  EXPECT_EQ(r.filledOf(1), 4);
  EXPECT_EQ(r.filledOf(3), 2);

  // Decode to 11 tokens: the window is positions 3..10, blocks 0..2 of the
  // sequence (ids 1, 2, 3); nothing leaves yet.
  s.len = 11;
  s.scheduled = 1;
  b = makeBatch({s});
  ASSERT_TRUE(r.prepare(b, {&l.view}));
  EXPECT_GE(r.entryOf(1), 0);
  // At 13 tokens the window starts at 5: block id 1 (positions 0..3) has
  // left it and is quantized over its 4 slots.
  write(l, b, rng);
  s.len = 13;
  s.scheduled = 2;
  b = makeBatch({s});
  ASSERT_TRUE(r.prepare(b, {&l.view}));
  EXPECT_EQ(r.entryOf(1), -1);
  EXPECT_GE(r.entryOf(2), 0);
  EXPECT_GE(r.entryOf(4), 0);
  EXPECT_EQ(r.entriesInUse(), 3);
}

TEST(KiviResidency, SequenceSittingOutAStepKeepsItsWindow) {
  Layer l;
  KiviResidency r;
  r.reset(kBlocks, kBlock, kResidual);
  std::mt19937 rng(2);
  ForwardBatch a = makeBatch({{{1, 2}, 6, 6}});
  ASSERT_TRUE(r.prepare(a, {&l.view}));
  write(l, a, rng);
  int32_t e2 = r.entryOf(2);
  // Another sequence alone: the first one's blocks are held by no scheduled
  // sequence, and few, so they stay in full precision.
  ForwardBatch b = makeBatch({{{5}, 3, 3}});
  ASSERT_TRUE(r.prepare(b, {&l.view}));
  write(l, b, rng);
  EXPECT_GE(r.entryOf(1), 0);
  EXPECT_EQ(r.entryOf(2), e2);
  EXPECT_NE(r.entryOf(5), e2);
  // It comes back and continues block 2 at slot 2.
  ForwardBatch c = makeBatch({{{1, 2}, 7, 1}});
  ASSERT_TRUE(r.prepare(c, {&l.view}));
  EXPECT_EQ(r.entryOf(2), e2);
  EXPECT_EQ(r.filledOf(2), 3);
}

TEST(KiviResidency, UnheldBlocksBeyondTheSlackAreQuantizedAndWidenedBack) {
  constexpr int64_t kMany = 40;
  Layer l;
  l.view.numBlocks = kMany + 2;
  l.allocate();
  KiviResidency r;
  r.reset(kMany + 2, kBlock, kResidual);
  std::mt19937 rng(4);
  // 30 one-block sequences of two tokens, then one other sequence alone.
  std::vector<Seq> many;
  for (int32_t b = 1; b <= 30; ++b)
    many.push_back({{b}, 2, 2});
  ForwardBatch a = makeBatch(many);
  ASSERT_TRUE(r.prepare(a, {&l.view}));
  write(l, a, rng);
  ForwardBatch b = makeBatch({{{kMany + 1}, 1, 1}});
  ASSERT_TRUE(r.prepare(b, {&l.view}));
  write(l, b, rng);
  // One block in use: 16 of the 30 unheld ones are kept, 14 quantized.
  int64_t quantized = 0, victim = -1;
  for (int32_t blk = 1; blk <= 30; ++blk)
    if (r.entryOf(blk) < 0) {
      ++quantized;
      victim = blk;
    }
  EXPECT_EQ(quantized, 14);
  ASSERT_GT(victim, 0);
  // Its sequence comes back at slot 2: the two slots are widened back and
  // read the same as the quantized block did.
  ForwardBatch c = makeBatch({{{int32_t(victim)}, 3, 1}});
  ASSERT_TRUE(r.prepare(c, {&l.view}));
  EXPECT_GE(r.entryOf(victim), 0);
  EXPECT_EQ(r.filledOf(victim), 3);
}

TEST(KiviResidency, LayersOfDifferentShapesGetTheirOwnRowSize) {
  Layer small, big;
  big.view.numKvHeads = 4 * kHeads;
  big.allocate();
  KiviResidency r;
  r.reset(kBlocks, kBlock, kResidual);
  ForwardBatch a = makeBatch({{{1, 2, 3}, 12, 12}});
  ASSERT_TRUE(r.prepare(a, {&small.view, &big.view}));
  // Every slot of every written block, in the larger layer's row size.
  std::vector<float> k(size_t(12 * big.view.slotElements()), 1.0f);
  ASSERT_TRUE(cpu::kvWrite(big.view, k.data(), big.view.slotElements(),
                           k.data(), big.view.slotElements(),
                           a.slotMapping.data(), 12)
                  .ok());
  // Read back through the pools' own size.
  const float *row = big.view.kResidual + (int64_t(r.entryOf(3)) * kBlock + 3) *
                                              big.view.slotElements();
  EXPECT_EQ(row[big.view.slotElements() - 1], 1.0f);
}

TEST(KiviResidency, BlockReusedFromSlotZeroStartsEmpty) {
  Layer l;
  KiviResidency r;
  r.reset(kBlocks, kBlock, kResidual);
  std::mt19937 rng(3);
  ForwardBatch a = makeBatch({{{3}, 3, 3}});
  ASSERT_TRUE(r.prepare(a, {&l.view}));
  write(l, a, rng);
  EXPECT_EQ(r.filledOf(3), 3);
  // Block 3 freed and given to a new sequence that writes one token.
  ForwardBatch b = makeBatch({{{3}, 1, 1}});
  ASSERT_TRUE(r.prepare(b, {&l.view}));
  EXPECT_EQ(r.filledOf(3), 1);
}

TEST(KiviResidency, RefusesSlotsAndTablesOutsideTheCache) {
  Layer l;
  KiviResidency r;
  r.reset(kBlocks, kBlock, kResidual);
  ForwardBatch b = makeBatch({{{1}, 1, 1}});
  b.slotMapping[0] = kBlocks * kBlock;
  Status s = r.prepare(b, {&l.view});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("slot 48"), std::string::npos) << s.message();
  b = makeBatch({{{1}, 1, 1}});
  b.blockTables[0] = kBlocks;
  s = r.prepare(b, {&l.view});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("block-table entry 0 = 12"), std::string::npos)
      << s.message();
  EXPECT_EQ(r.entriesInUse(), 0);
}
