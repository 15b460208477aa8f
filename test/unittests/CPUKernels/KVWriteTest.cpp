//===- KVWriteTest.cpp - Storing K/V rows into the paged cache ------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

struct Cache {
  std::vector<uint8_t> k, v, kParams, vParams;
  std::vector<float> kScale, vScale;
  KVCacheView view;
  Cache(int64_t blocks, int64_t bs, int64_t heads, int64_t hd, DType t,
        int64_t group = 0) {
    view.numBlocks = blocks;
    view.blockSize = bs;
    view.numKvHeads = heads;
    view.headDim = hd;
    view.dtype = t;
    view.group = group;
    k.assign(view.poolBytes(), 0xAB);
    v.assign(view.poolBytes(), 0xCD);
    view.k = k.data();
    view.v = v.data();
    if (hasGroupParams(t)) {
      kParams.assign(view.paramPoolBytes(), 0xA5);
      vParams.assign(view.paramPoolBytes(), 0x5A);
      view.kParams = kParams.data();
      view.vParams = vParams.data();
    }
    if (isFp8(t)) {
      for (int64_t h = 0; h < heads; ++h) {
        kScale.push_back(0.05f * float(h + 1));
        vScale.push_back(0.3f / float(h + 1));
      }
      view.kScale = kScale.data();
      view.vScale = vScale.data();
    }
  }
};

/// Every cache type, with the groups int8 / int4 use for head size hd.
std::vector<std::pair<DType, int64_t>> allFormats(int64_t hd) {
  return {{DType::F32, 0},     {DType::BF16, 0},    {DType::F16, 0},
          {DType::FP8E4M3, 0}, {DType::FP8E5M2, 0}, {DType::I8, hd},
          {DType::I8, hd / 2}, {DType::I4, hd},     {DType::I4, 8}};
}

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

// Tests that every cache type stores what quantizeKvRow defines, per head,
// in the slots given (first and last of blocks, -1 skipped), and that
// nothing else in the data or params pools changes.
TEST(KVWrite, QuantizedRowsMatchReference) {
  for (Isa isa : hostIsas())
    for (auto [t, group] : allFormats(24)) {
      IsaScope scope(isa);
      SCOPED_TRACE(std::string(isaName(isa)) + " " + dtypeName(t) + " group " +
                   std::to_string(group));
      int64_t heads = 3, hd = 24, row = heads * hd, stride = row + 5;
      Cache c(4, 8, heads, hd, t, group);
      std::vector<int64_t> slots = {7, 8, -1, 0, 31, 15, 16, -1};
      int64_t tokens = int64_t(slots.size());
      auto k = randomVector(size_t(tokens * stride), 31, -3, 3);
      auto v = randomVector(size_t(tokens * stride), 32, -3, 3);
      k[size_t(stride + 4)] = NAN; // a poisoned group in one head
      Cache before = c;
      ASSERT_TRUE(kvWrite(c.view, k.data(), stride, v.data(), stride,
                          slots.data(), tokens, parallelPool()));
      size_t rowBytes = c.view.headRowBytes();
      int64_t paramRow = kvRowParams(t, hd, group);
      std::vector<bool> written(32, false);
      for (int64_t i = 0; i < tokens; ++i) {
        int64_t s = slots[size_t(i)];
        if (s < 0)
          continue;
        written[size_t(s)] = true;
        for (int64_t h = 0; h < heads; ++h) {
          for (int kv = 0; kv < 2; ++kv) {
            const std::vector<float> &x = kv ? v : k;
            const std::vector<float> &scales = kv ? c.vScale : c.kScale;
            std::vector<uint8_t> data(rowBytes);
            std::vector<uint16_t> params(static_cast<size_t>(paramRow));
            quantizeKvRow(x.data() + i * stride + h * hd, hd, t, group,
                          scales.empty() ? 1.0f : scales[size_t(h)],
                          data.data(), params.data());
            const uint8_t *pool = (kv ? c.v : c.k).data();
            ASSERT_EQ(std::memcmp(pool + size_t(s) * c.view.slotBytes() +
                                      size_t(h) * rowBytes,
                                  data.data(), rowBytes),
                      0)
                << "slot " << s << " head " << h << " kv " << kv;
            if (paramRow == 0)
              continue;
            const uint8_t *pp = (kv ? c.vParams : c.kParams).data();
            ASSERT_EQ(std::memcmp(pp + size_t(s) * c.view.paramSlotBytes() +
                                      size_t(h * paramRow) * 2,
                                  params.data(), size_t(paramRow) * 2),
                      0)
                << "params of slot " << s << " head " << h;
          }
        }
      }
      for (size_t s = 0; s < written.size(); ++s) {
        if (written[s])
          continue;
        size_t sb = c.view.slotBytes(), pb = c.view.paramSlotBytes();
        EXPECT_EQ(
            std::memcmp(c.k.data() + s * sb, before.k.data() + s * sb, sb), 0);
        EXPECT_EQ(
            std::memcmp(c.v.data() + s * sb, before.v.data() + s * sb, sb), 0);
        if (pb) {
          EXPECT_EQ(std::memcmp(c.kParams.data() + s * pb,
                                before.kParams.data() + s * pb, pb),
                    0);
          EXPECT_EQ(std::memcmp(c.vParams.data() + s * pb,
                                before.vParams.data() + s * pb, pb),
                    0);
        }
      }
    }
}

// Tests that the view's checks name what is wrong for each type.
TEST(KVWrite, ValidatesQuantizedViews) {
  std::vector<float> kv(48, 1.0f);
  int64_t slot[1] = {3};
  auto fails = [&](const KVCacheView &view, const std::string &what) {
    Status s = kvWrite(view, kv.data(), 48, kv.data(), 48, slot, 1);
    EXPECT_FALSE(s) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_FALSE(validateKVCache(view)) << what;
  };
  {
    Cache c(2, 8, 2, 24, DType::FP8E4M3);
    EXPECT_TRUE(kvWrite(c.view, kv.data(), 48, kv.data(), 48, slot, 1));
    KVCacheView bad = c.view;
    bad.kScale = nullptr;
    fails(bad, "kScale");
    bad = c.view;
    c.vScale[1] = 0.0f;
    fails(bad, "vScale[1]");
    c.vScale[1] = INFINITY;
    fails(bad, "vScale[1]");
    c.vScale[1] = NAN;
    fails(bad, "vScale[1]");
    c.vScale[1] = 1.0f;
    bad.group = 8;
    fails(bad, "group");
    bad.group = 0;
    bad.kParams = c.k.data();
    fails(bad, "kParams");
  }
  for (DType t : {DType::I8, DType::I4}) {
    Cache c(2, 8, 2, 24, t, 6);
    EXPECT_TRUE(kvWrite(c.view, kv.data(), 48, kv.data(), 48, slot, 1));
    KVCacheView bad = c.view;
    bad.group = 0;
    fails(bad, "group");
    bad.group = 5; // does not divide 24
    fails(bad, "group");
    bad.group = -6;
    fails(bad, "group");
    bad = c.view;
    bad.vParams = nullptr;
    fails(bad, "vParams");
    bad = c.view;
    float scale[2] = {1, 1};
    bad.kScale = scale;
    fails(bad, "kScale");
  }
  {
    Cache c(2, 8, 2, 24, DType::I4, 3); // odd group
    fails(c.view, "even");
    Cache f(2, 8, 2, 24, DType::BF16);
    KVCacheView bad = f.view;
    bad.group = 24;
    fails(bad, "group");
    bad = f.view;
    float scale[2] = {1, 1};
    bad.vScale = scale;
    fails(bad, "vScale");
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
