//===- KVWriteTest.cpp - Storing K/V rows into the paged cache ------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/KVCache.h"

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

struct Cache {
  std::vector<uint8_t> k, v;
  KVCacheView view;
  Cache(int64_t blocks, int64_t bs, int64_t heads, int64_t hd, DType t) {
    view.numBlocks = blocks;
    view.blockSize = bs;
    view.numKvHeads = heads;
    view.headDim = hd;
    view.dtype = t;
    k.assign(view.poolBytes(), 0xAB);
    v.assign(view.poolBytes(), 0xCD);
    view.k = k.data();
    view.v = v.data();
  }
};

// Tests strided inputs (slices of a fused QKV row), skipped -1 slots and
// every storage type: each written slot holds the rounded row, every other
// byte keeps its fill.
TEST(KVWrite, StridedRowsAllTypes) {
  for (Isa isa : hostIsas())
    for (DType t : {DType::F32, DType::BF16, DType::F16}) {
      IsaScope scope(isa);
      int64_t heads = 2, hd = 24, row = heads * hd, stride = 3 * row;
      Cache c(5, 8, heads, hd, t);
      std::vector<int64_t> slots = {17, -1, 0, 39, 8};
      int64_t tokens = int64_t(slots.size());
      auto qkv = randomVector(size_t(tokens * stride), 30, -100, 100);
      const float *k = qkv.data() + row, *v = qkv.data() + 2 * row;
      ASSERT_TRUE(kvWrite(c.view, k, stride, v, stride, slots.data(), tokens,
                          parallelPool()));
      std::vector<bool> written(size_t(40), false);
      for (int64_t i = 0; i < tokens; ++i) {
        if (slots[size_t(i)] < 0)
          continue;
        written[size_t(slots[size_t(i)])] = true;
        for (int64_t e = 0; e < row; ++e) {
          size_t at = size_t(slots[size_t(i)] * row + e);
          ASSERT_EQ(loadAsFloat(c.k.data(), t, at),
                    roundTo({k[i * stride + e]}, t)[0]);
          ASSERT_EQ(loadAsFloat(c.v.data(), t, at),
                    roundTo({v[i * stride + e]}, t)[0]);
        }
      }
      size_t slotBytes = size_t(row) * dtypeSize(t);
      for (size_t s = 0; s < written.size(); ++s) {
        if (written[s])
          continue;
        for (size_t b = 0; b < slotBytes; ++b)
          ASSERT_EQ(c.k[s * slotBytes + b], 0xAB) << "slot " << s;
      }
    }
}

TEST(KVWrite, EmptyBatch) {
  Cache c(1, 8, 1, 8, DType::F32);
  EXPECT_TRUE(kvWrite(c.view, nullptr, 8, nullptr, 8, nullptr, 0));
}

TEST(KVWrite, RejectsBadSlots) {
  Cache c(2, 8, 1, 4, DType::BF16);
  std::vector<float> kv(8, 1.0f);
  int64_t outside[2] = {16, 0};
  Status s = kvWrite(c.view, kv.data(), 4, kv.data(), 4, outside, 2);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("16"), std::string::npos);
  int64_t negative[2] = {-2, 0};
  EXPECT_FALSE(kvWrite(c.view, kv.data(), 4, kv.data(), 4, negative, 2));
  int64_t dup[2] = {3, 3};
  EXPECT_FALSE(kvWrite(c.view, kv.data(), 4, kv.data(), 4, dup, 2));
  int64_t ok[2] = {3, 4};
  EXPECT_FALSE(kvWrite(c.view, kv.data(), 2, kv.data(), 4, ok, 2)); // stride
  c.view.blockSize = 0;
  EXPECT_FALSE(kvWrite(c.view, kv.data(), 4, kv.data(), 4, ok, 2));
}

} // namespace
