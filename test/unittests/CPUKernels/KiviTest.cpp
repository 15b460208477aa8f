//===- KiviTest.cpp - 2-bit KIVI caches (DType::I2) -----------------------===//
//
// The int2 row and per-channel key formats, block quantization and its
// inverse, kvWrite into resident blocks, and paged attention over caches
// that mix quantized and resident blocks, against attention on K/V rebuilt
// with the reference functions (both ISAs, both AVX-512 formulations).
//
//===----------------------------------------------------------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/KVRowLoad.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/Reference/Reference.h"

#include <algorithm>
#include <climits>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

unsigned code2(const uint8_t *b, int64_t i) {
  return (b[i / 4] >> (2 * (i % 4))) & 3u;
}

TEST(KVQuantKivi, TypeBasics) {
  EXPECT_STREQ(dtypeName(DType::I2), "int2");
  EXPECT_EQ(dtypeBits(DType::I2), 2u);
  EXPECT_EQ(dtypeSize(DType::I2), 0u);
  EXPECT_EQ(kvQuantMax(DType::I2), 3u);
  EXPECT_EQ(kvRowBytes(DType::I2, 64), 16u);
  EXPECT_EQ(kvRowParams(DType::I2, 64, 16), 8);
  KVCacheView c;
  c.dtype = DType::I2;
  c.numBlocks = 3;
  c.blockSize = 16;
  c.numKvHeads = 4;
  c.headDim = 128;
  c.group = 32;
  EXPECT_EQ(c.headRowBytes(), 32u);
  EXPECT_EQ(c.poolBytes(), 48u * 4 * 32);
  EXPECT_EQ(c.kParamPoolBytes(), 3u * 4 * 128 * 4);
  EXPECT_EQ(c.vParamPoolBytes(), 48u * 4 * 4 * 4);
  EXPECT_EQ(c.paramPoolBytes(), 0u);
  // 2 * 4 * 32 data + 4 * 128 * 4 / 16 K params + 4 * 4 * 4 V params.
  EXPECT_EQ(kvBytesPerToken(DType::I2, 4, 128, 32, 16), 256u + 128 + 64);
  EXPECT_EQ(kvBytesPerToken(DType::I2, 4, 128, 32), 0u);
  // Other types: k/v params pools as before, blockSize ignored.
  c.dtype = DType::I4;
  EXPECT_EQ(c.kParamPoolBytes(), c.paramPoolBytes());
  EXPECT_EQ(c.vParamPoolBytes(), c.paramPoolBytes());
  EXPECT_EQ(kvBytesPerToken(DType::I4, 4, 128, 32, 16), 2u * (256 + 64));
}

TEST(KVQuantKivi, ValueRowsBoundsAndLayout) {
  for (int64_t hd : {4, 32, 64, 128})
    for (int64_t group : {int64_t(4), int64_t(16), hd}) {
      if (hd % group)
        continue;
      auto x = randomVector(size_t(hd), uint32_t(hd + group), -3, 5);
      std::vector<uint8_t> data(static_cast<size_t>(hd / 4));
      std::vector<uint16_t> params(static_cast<size_t>(2 * hd / group));
      std::vector<float> back(static_cast<size_t>(hd));
      quantizeKvRow(x.data(), hd, DType::I2, group, 1.0f, data.data(),
                    params.data());
      dequantizeKvRow(data.data(), params.data(), hd, DType::I2, group, 1.0f,
                      back.data());
      for (int64_t i = 0; i < hd; ++i) {
        float scale = f16ToFloat(params[size_t(2 * (i / group))]);
        float mn = f16ToFloat(params[size_t(2 * (i / group) + 1)]);
        unsigned q = code2(data.data(), i);
        EXPECT_EQ(back[size_t(i)], mn + float(q) * scale);
        EXPECT_LE(std::fabs(back[size_t(i)] - x[size_t(i)]),
                  scale / 2 * (1 + 1e-6f))
            << hd << " " << group << " " << i;
        EXPECT_GE(x[size_t(i)], mn);
        EXPECT_LE(x[size_t(i)], mn + 3 * scale * (1 + 1e-6f));
      }
    }
  // Bit layout: element 4i + j in bits 2j..2j+1 of byte i.
  float x[8] = {0, 1, 2, 3, 3, 2, 1, 0};
  uint8_t data[2];
  uint16_t params[2];
  quantizeKvRow(x, 8, DType::I2, 8, 1.0f, data, params);
  EXPECT_EQ(f16ToFloat(params[0]), 1.0f);
  EXPECT_EQ(f16ToFloat(params[1]), 0.0f);
  EXPECT_EQ(data[0], 0b11100100);
  EXPECT_EQ(data[1], 0b00011011);
}

TEST(KVQuantKivi, ConstantAndNonFiniteGroups) {
  float x[8] = {0, 0, 0, 0, 0.375f, 0.375f, 0.375f, 0.375f};
  uint8_t data[2];
  uint16_t params[4];
  float back[8];
  quantizeKvRow(x, 8, DType::I2, 4, 1.0f, data, params);
  dequantizeKvRow(data, params, 8, DType::I2, 4, 1.0f, back);
  EXPECT_EQ(params[0], 0);
  EXPECT_EQ(params[2], 0);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(back[i], x[i]);
  x[1] = NAN;
  x[6] = INFINITY;
  quantizeKvRow(x, 8, DType::I2, 4, 1.0f, data, params);
  dequantizeKvRow(data, params, 8, DType::I2, 4, 1.0f, back);
  EXPECT_EQ(data[0], 0);
  EXPECT_EQ(data[1], 0);
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(std::isnan(back[i])) << i;
}

TEST(KVQuantKivi, KeysPerChannel) {
  const int64_t hd = 64, n = 13;
  auto rows = randomVector(size_t(n * hd), 7, -2, 2);
  for (int64_t r = 0; r < n; ++r) {
    rows[size_t(r * hd + 5)] = -0.25f; // a constant channel
    rows[size_t(r * hd + 9)] *= 50.0f; // a wide one
  }
  rows[size_t(3 * hd + 17)] = NAN; // channel 17 holds a NaN
  std::vector<uint8_t> codes(size_t(n * hd / 4), 0xff);
  std::vector<uint16_t> params(static_cast<size_t>(2 * hd));
  kiviQuantizeKeys(rows.data(), n, hd, codes.data(), params.data());
  std::vector<float> back(static_cast<size_t>(hd));
  for (int64_t r = 0; r < n; ++r) {
    kiviDequantizeKey(codes.data() + r * hd / 4, params.data(), hd,
                      back.data());
    for (int64_t c = 0; c < hd; ++c) {
      float scale = f16ToFloat(params[size_t(2 * c)]);
      float mn = f16ToFloat(params[size_t(2 * c + 1)]);
      if (c == 17) {
        EXPECT_TRUE(std::isnan(back[size_t(c)]));
        EXPECT_EQ(code2(codes.data() + r * hd / 4, c), 0u);
        continue;
      }
      EXPECT_EQ(back[size_t(c)],
                mn + float(code2(codes.data() + r * hd / 4, c)) * scale);
      EXPECT_LE(std::fabs(back[size_t(c)] - rows[size_t(r * hd + c)]),
                scale / 2 * (1 + 1e-6f))
          << r << " " << c;
    }
    EXPECT_EQ(back[5], -0.25f);
  }
  // Per-channel params equal those of the channel as a value group.
  std::vector<float> col(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r)
    col[size_t(r)] = rows[size_t(r * hd + 9)];
  uint16_t want[2];
  std::vector<uint8_t> tmp(4);
  // n = 13 is not a multiple of 4: quantize the column padded with its
  // first value (same min/max).
  std::vector<float> padded = col;
  padded.resize(16, col[0]);
  quantizeKvRow(padded.data(), 16, DType::I2, 16, 1.0f, tmp.data(), want);
  EXPECT_EQ(params[18], want[0]);
  EXPECT_EQ(params[19], want[1]);
}

// Tests the row loaders the tiles use (scalar and AVX-512) bit for bit
// against the definitions: resident f32 rows, keys with per-channel
// params, values with groups of 16 (vector path) and 12 (scalar fallback).
TEST(KVQuantKivi, LoadersMatchTheDefinition) {
  for (int64_t hd : {36, 64, 128}) {
    const int64_t n = 5;
    auto x = randomVector(static_cast<size_t>(n * hd), uint32_t(hd), -3, 3);
    x[3] = NAN; // one NaN channel (keys), one NaN group (values)
    std::vector<uint8_t> codes(static_cast<size_t>(n * hd / 4));
    std::vector<uint16_t> kParams(static_cast<size_t>(2 * hd));
    kiviQuantizeKeys(x.data(), n, hd, codes.data(), kParams.data());
    for (int64_t group : {int64_t(16), int64_t(12), hd}) {
      if (hd % group)
        continue;
      std::vector<uint8_t> vCodes(codes.size());
      std::vector<uint16_t> vParams(static_cast<size_t>(n * 2 * hd / group));
      for (int64_t r = 0; r < n; ++r)
        quantizeKvRow(x.data() + r * hd, hd, DType::I2, group, 1.0f,
                      vCodes.data() + r * hd / 4,
                      vParams.data() + r * 2 * hd / group);
      // Rows: quantized, quantized, resident (f32), quantized, quantized.
      const char *kRows[n], *vRows[n];
      const uint16_t *kPar[n], *vPar[n];
      std::vector<float> wantK(static_cast<size_t>(n * hd)),
          wantV(wantK.size());
      for (int64_t r = 0; r < n; ++r) {
        if (r == 2) {
          kRows[r] = vRows[r] =
              reinterpret_cast<const char *>(x.data() + r * hd);
          kPar[r] = vPar[r] = nullptr;
          std::copy_n(x.begin() + r * hd, hd, wantK.begin() + r * hd);
          std::copy_n(x.begin() + r * hd, hd, wantV.begin() + r * hd);
          continue;
        }
        kRows[r] = reinterpret_cast<const char *>(codes.data() + r * hd / 4);
        vRows[r] = reinterpret_cast<const char *>(vCodes.data() + r * hd / 4);
        kPar[r] = kParams.data();
        vPar[r] = vParams.data() + r * 2 * hd / group;
        kiviDequantizeKey(codes.data() + r * hd / 4, kParams.data(), hd,
                          wantK.data() + r * hd);
        dequantizeKvRow(vRows[r], vPar[r], hd, DType::I2, group, 1.0f,
                        wantV.data() + r * hd);
      }
      detail::KvRowFormat kf{DType::I2, hd, group, 1.0f};
      kf.kiviKey = true;
      detail::KvRowFormat vf{DType::I2, hd, group, 1.0f};
      for (Isa isa : hostIsas()) {
        IsaScope scope(isa);
        SCOPED_TRACE(std::string(isaName(isa)) + " hd " + std::to_string(hd) +
                     " group " + std::to_string(group));
        std::vector<float> k(wantK.size(), -1.0f), v(wantV.size(), -1.0f);
        detail::loadKvRows(kf, kRows, kPar, n, k.data());
        detail::loadKvRows(vf, vRows, vPar, n, v.data());
        EXPECT_EQ(std::memcmp(k.data(), wantK.data(), k.size() * 4), 0);
        EXPECT_EQ(std::memcmp(v.data(), wantV.data(), v.size() * 4), 0);
        std::vector<float> one(static_cast<size_t>(hd));
        detail::loadKvRow(kf, kRows[1], kPar[1], one.data());
        EXPECT_EQ(std::memcmp(one.data(), wantK.data() + hd, size_t(hd) * 4),
                  0);
      }
    }
  }
}

/// An int2 cache with every pool owned.
struct KiviCache {
  std::vector<uint8_t> k, v, kParams, vParams;
  std::vector<float> kRes, vRes;
  std::vector<int32_t> resident;
  KVCacheView view;
  KiviCache(int64_t blocks, int64_t bs, int64_t heads, int64_t hd,
            int64_t group, int64_t entries) {
    view.numBlocks = blocks;
    view.blockSize = bs;
    view.numKvHeads = heads;
    view.headDim = hd;
    view.dtype = DType::I2;
    view.group = group;
    view.residualEntries = entries;
    k.assign(view.poolBytes(), 0xA5);
    v.assign(view.poolBytes(), 0x5A);
    kParams.assign(view.kParamPoolBytes(), 0x11);
    vParams.assign(view.vParamPoolBytes(), 0x22);
    kRes.assign(view.residualPoolBytes() / 4, -7.0f);
    vRes.assign(view.residualPoolBytes() / 4, -9.0f);
    resident.assign(size_t(blocks), -1);
    view.k = k.data();
    view.v = v.data();
    view.kParams = kParams.data();
    view.vParams = vParams.data();
    view.kResidual = kRes.data();
    view.vResidual = vRes.data();
    view.residentIndex = resident.data();
  }
  float *kRow(int64_t entry, int64_t r) {
    return kRes.data() + (entry * view.blockSize + r) * view.slotElements();
  }
  float *vRow(int64_t entry, int64_t r) {
    return vRes.data() + (entry * view.blockSize + r) * view.slotElements();
  }
};

TEST(KVWriteKivi, Validate) {
  KiviCache c(4, 16, 2, 64, 32, 2);
  EXPECT_TRUE(validateKVCache(c.view));
  KVCacheView v = c.view;
  v.headDim = 66;
  v.group = 66;
  EXPECT_FALSE(validateKVCache(v));
  v = c.view;
  v.group = 24;
  EXPECT_FALSE(validateKVCache(v));
  v = c.view;
  v.residentIndex = nullptr;
  EXPECT_FALSE(validateKVCache(v));
  v = c.view;
  v.kParams = nullptr;
  EXPECT_FALSE(validateKVCache(v));
  v = c.view;
  v.vResidual = nullptr;
  EXPECT_FALSE(validateKVCache(v));
  v = c.view;
  v.residualEntries = -1;
  EXPECT_FALSE(validateKVCache(v));
  v = c.view;
  v.residual = 8;
  EXPECT_FALSE(validateKVCache(v));
  v.residual = 32;
  EXPECT_TRUE(validateKVCache(v));
}

TEST(KVWriteKivi, KvWriteIntoResidentBlocks) {
  const int64_t bs = 4, heads = 2, hd = 32, row = heads * hd;
  KiviCache c(5, bs, heads, hd, 16, 2);
  c.resident[3] = 1;
  c.resident[1] = 0;
  auto k = randomVector(size_t(3 * row), 1),
       v = randomVector(size_t(3 * row), 2);
  std::vector<int64_t> slots = {13, -1, 6};
  auto kBytes = c.k, vBytes = c.v;
  ASSERT_TRUE(kvWrite(c.view, k.data(), row, v.data(), row, slots.data(), 3));
  EXPECT_TRUE(std::equal(k.begin(), k.begin() + row, c.kRow(1, 1)));
  EXPECT_TRUE(std::equal(v.begin(), v.begin() + row, c.vRow(1, 1)));
  EXPECT_TRUE(std::equal(k.begin() + 2 * row, k.end(), c.kRow(0, 2)));
  EXPECT_TRUE(std::equal(v.begin() + 2 * row, v.end(), c.vRow(0, 2)));
  EXPECT_EQ(c.kRow(0, 1)[0], -7.0f); // untouched
  EXPECT_EQ(c.k, kBytes);            // data pools untouched
  EXPECT_EQ(c.v, vBytes);
  // A slot of a quantized block, or of an entry past the pools.
  slots = {13, -1, 9};
  Status st = kvWrite(c.view, k.data(), row, v.data(), row, slots.data(), 3);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("slot 9"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("block 2"), std::string::npos) << st.message();
  c.resident[2] = 2;
  st = kvWrite(c.view, k.data(), row, v.data(), row, slots.data(), 3);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("residual entry 2"), std::string::npos)
      << st.message();
  slots = {13, 13, 6};
  EXPECT_FALSE(kvWrite(c.view, k.data(), row, v.data(), row, slots.data(), 3));
  slots = {13, 20, 6};
  EXPECT_FALSE(kvWrite(c.view, k.data(), row, v.data(), row, slots.data(), 3));
}

TEST(KVWriteKivi, QuantizeDequantizeBlock) {
  const int64_t bs = 8, heads = 3, hd = 64, group = 16;
  const int64_t row = heads * hd;
  for (int64_t filled : {int64_t(1), bs - 1, bs}) {
    SCOPED_TRACE(filled);
    KiviCache c(4, bs, heads, hd, group, 3);
    const int64_t block = 2, entry = 1;
    c.resident[block] = int32_t(entry);
    auto k = randomVector(size_t(bs * row), uint32_t(filled), -2, 2);
    auto v = randomVector(size_t(bs * row), uint32_t(filled + 50), -2, 2);
    std::copy(k.begin(), k.end(), c.kRow(entry, 0));
    std::copy(v.begin(), v.end(), c.vRow(entry, 0));
    auto otherK = c.k;
    ASSERT_TRUE(kiviQuantizeBlock(c.view, block, filled));
    EXPECT_EQ(c.resident[block], entry);
    // Codes and params as the reference functions give them.
    const size_t hb = size_t(hd / 4), sb = size_t(heads) * hb;
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<float> rows(static_cast<size_t>(filled * hd));
      for (int64_t r = 0; r < filled; ++r)
        std::copy_n(k.begin() + (r * heads + h) * hd, hd,
                    rows.begin() + r * hd);
      std::vector<uint8_t> codes(size_t(filled) * hb);
      std::vector<uint16_t> params(static_cast<size_t>(2 * hd));
      kiviQuantizeKeys(rows.data(), filled, hd, codes.data(), params.data());
      const uint16_t *kp =
          reinterpret_cast<const uint16_t *>(c.kParams.data()) +
          (block * heads + h) * hd * 2;
      EXPECT_TRUE(std::equal(params.begin(), params.end(), kp));
      for (int64_t r = 0; r < filled; ++r)
        EXPECT_EQ(std::memcmp(c.k.data() + size_t(block * bs + r) * sb +
                                  size_t(h) * hb,
                              codes.data() + size_t(r) * hb, hb),
                  0);
    }
    // Unfilled slots: code 0; other blocks untouched.
    for (int64_t r = filled; r < bs; ++r)
      for (size_t i = 0; i < sb; ++i) {
        EXPECT_EQ(c.k[size_t(block * bs + r) * sb + i], 0);
        EXPECT_EQ(c.v[size_t(block * bs + r) * sb + i], 0);
      }
    for (size_t i = 0; i < size_t(block * bs) * sb; ++i)
      ASSERT_EQ(c.k[i], otherK[i]);
    // Back into another entry: the values the reference gives, rows past
    // filled untouched.
    const int64_t back = 2;
    ASSERT_TRUE(kiviDequantizeBlock(c.view, block, filled, back));
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<float> rows(static_cast<size_t>(filled * hd));
      for (int64_t r = 0; r < filled; ++r)
        std::copy_n(k.begin() + (r * heads + h) * hd, hd,
                    rows.begin() + r * hd);
      std::vector<uint8_t> codes(size_t(filled) * hb);
      std::vector<uint16_t> params(static_cast<size_t>(2 * hd));
      kiviQuantizeKeys(rows.data(), filled, hd, codes.data(), params.data());
      std::vector<float> want(static_cast<size_t>(hd));
      std::vector<uint8_t> vCodes(hb);
      std::vector<uint16_t> vParams(static_cast<size_t>(2 * hd / group));
      for (int64_t r = 0; r < filled; ++r) {
        kiviDequantizeKey(codes.data() + size_t(r) * hb, params.data(), hd,
                          want.data());
        EXPECT_TRUE(
            std::equal(want.begin(), want.end(), c.kRow(back, r) + h * hd));
        const float *vx = v.data() + (r * heads + h) * hd;
        quantizeKvRow(vx, hd, DType::I2, group, 1.0f, vCodes.data(),
                      vParams.data());
        dequantizeKvRow(vCodes.data(), vParams.data(), hd, DType::I2, group,
                        1.0f, want.data());
        EXPECT_TRUE(
            std::equal(want.begin(), want.end(), c.vRow(back, r) + h * hd));
        for (int64_t d = 0; d < hd; ++d) {
          float scale = f16ToFloat(params[size_t(2 * d)]);
          EXPECT_LE(std::fabs(c.kRow(back, r)[h * hd + d] -
                              k[size_t((r * heads + h) * hd + d)]),
                    scale / 2 * (1 + 1e-6f));
        }
      }
    }
    for (int64_t r = filled; r < bs; ++r) {
      EXPECT_EQ(c.kRow(back, r)[0], -7.0f);
      EXPECT_EQ(c.vRow(back, r)[row - 1], -9.0f);
    }
  }
  KiviCache c(4, bs, heads, hd, group, 3);
  EXPECT_FALSE(kiviQuantizeBlock(c.view, 1, 4)); // not resident
  c.resident[1] = 0;
  EXPECT_FALSE(kiviQuantizeBlock(c.view, 1, 0));
  EXPECT_FALSE(kiviQuantizeBlock(c.view, 1, bs + 1));
  EXPECT_FALSE(kiviQuantizeBlock(c.view, 4, 1));
  EXPECT_FALSE(kiviDequantizeBlock(c.view, 1, 4, 3));
}

// ---- paged attention on mixed caches ----

struct Case {
  std::vector<int32_t> seqLens, queryLens;
  /// Per sequence: how many of its last blocks stay resident (the rest are
  /// quantized, the last quantized one with only its filled slots when
  /// it is the sequence's last block).
  std::vector<int32_t> residentBlocks;
  int64_t blockSize = 16, numKvHeads = 2, group = 1, headDim = 64;
  int64_t quantGroup = 32;
  int64_t window = 0;
  float softCap = 0.0f;
  uint32_t seed = 1;
};

class MinRowsScope {
public:
  explicit MinRowsScope(int64_t rows)
      : saved(rows ? detail::setTransposedMinRows(rows) : 0) {}
  ~MinRowsScope() {
    if (saved)
      detail::setTransposedMinRows(saved);
  }

private:
  int64_t saved;
};

void check(const Case &c, float tol = 2e-5f, bool amx = false) {
  const int64_t numSeqs = int64_t(c.seqLens.size());
  const int64_t bs = c.blockSize, H = c.numKvHeads, hd = c.headDim;
  const int64_t row = H * hd;
  int64_t maxBlocks = 1, totalBlocks = 0;
  for (int32_t len : c.seqLens) {
    maxBlocks = std::max<int64_t>(maxBlocks, (len + bs - 1) / bs + 1);
    totalBlocks += (len + bs - 1) / bs;
  }
  KiviCache cache(totalBlocks + 2, bs, H, hd, c.quantGroup, totalBlocks + 1);
  std::vector<int32_t> ids(static_cast<size_t>(cache.view.numBlocks));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = int32_t(i);
  std::mt19937 rng(c.seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int32_t> entries(static_cast<size_t>(totalBlocks + 1));
  for (size_t i = 0; i < entries.size(); ++i)
    entries[i] = int32_t(i);
  std::shuffle(entries.begin(), entries.end(), rng);
  std::vector<int32_t> tables(size_t(numSeqs * maxBlocks), -1);
  std::vector<std::vector<float>> denseK, denseV;
  size_t nextBlock = 0, nextEntry = 0;
  for (int64_t s = 0; s < numSeqs; ++s) {
    int64_t len = c.seqLens[size_t(s)];
    int64_t blocks = (len + bs - 1) / bs;
    auto k = randomVector(size_t(len * row), c.seed * 100 + uint32_t(s));
    auto v = randomVector(size_t(len * row), c.seed * 200 + uint32_t(s));
    std::vector<int64_t> slots;
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t id = ids[nextBlock++];
      tables[size_t(s * maxBlocks + b)] = id;
      cache.resident[size_t(id)] = entries[nextEntry++];
    }
    for (int64_t p = 0; p < len; ++p)
      slots.push_back(int64_t(tables[size_t(s * maxBlocks + p / bs)]) * bs +
                      p % bs);
    ASSERT_TRUE(
        kvWrite(cache.view, k.data(), row, v.data(), row, slots.data(), len));
    // Quantize all but the last residentBlocks blocks, and rebuild what
    // the cache holds with the reference functions.
    std::vector<float> dk = k, dv = v;
    int64_t keep = c.residentBlocks[size_t(s)];
    for (int64_t b = 0; b < blocks - keep; ++b) {
      int32_t id = tables[size_t(s * maxBlocks + b)];
      int64_t filled = std::min(bs, len - b * bs);
      ASSERT_TRUE(kiviQuantizeBlock(cache.view, id, filled));
      cache.resident[size_t(id)] = -1;
      for (int64_t h = 0; h < H; ++h) {
        std::vector<float> rows(static_cast<size_t>(filled * hd));
        for (int64_t r = 0; r < filled; ++r)
          std::copy_n(k.begin() + ((b * bs + r) * H + h) * hd, hd,
                      rows.begin() + r * hd);
        std::vector<uint8_t> codes(static_cast<size_t>(filled * hd / 4));
        std::vector<uint16_t> params(static_cast<size_t>(2 * hd));
        kiviQuantizeKeys(rows.data(), filled, hd, codes.data(), params.data());
        std::vector<uint8_t> vc(static_cast<size_t>(hd / 4));
        std::vector<uint16_t> vp(static_cast<size_t>(2 * hd / c.quantGroup));
        for (int64_t r = 0; r < filled; ++r) {
          size_t at = size_t(((b * bs + r) * H + h) * hd);
          kiviDequantizeKey(codes.data() + r * hd / 4, params.data(), hd,
                            dk.data() + at);
          quantizeKvRow(v.data() + at, hd, DType::I2, c.quantGroup, 1.0f,
                        vc.data(), vp.data());
          dequantizeKvRow(vc.data(), vp.data(), hd, DType::I2, c.quantGroup,
                          1.0f, dv.data() + at);
        }
      }
    }
    denseK.push_back(dk);
    denseV.push_back(dv);
  }
  // Entries no block holds (released after quantizing, or never used),
  // and the int2 slots of resident blocks, hold garbage never to be read.
  std::vector<bool> held(size_t(cache.view.residualEntries), false);
  for (int32_t e : cache.resident)
    if (e >= 0)
      held[size_t(e)] = true;
  for (int64_t e = 0; e < cache.view.residualEntries; ++e)
    if (!held[size_t(e)])
      for (int64_t i = 0; i < bs * row; ++i) {
        cache.kRow(e, 0)[i] = NAN;
        cache.vRow(e, 0)[i] = NAN;
      }

  std::vector<int32_t> qsl = {0};
  for (int32_t ql : c.queryLens)
    qsl.push_back(qsl.back() + ql);
  RaggedBatch batch;
  batch.numTokens = qsl.back();
  batch.numSeqs = numSeqs;
  batch.queryStartLoc = qsl.data();
  batch.seqLens = c.seqLens.data();
  batch.blockTables = tables.data();
  batch.maxBlocksPerSeq = maxBlocks;
  AttentionParams params;
  params.numHeads = H * c.group;
  params.scale = 1.0f / std::sqrt(float(hd));
  params.slidingWindow = c.window;
  params.softCap = c.softCap;
  auto q = randomVector(size_t(batch.numTokens * params.numHeads * hd),
                        c.seed * 300, -2, 2);
  size_t outSize = q.size();
  std::vector<float> want(outSize), paged(outSize);
  std::vector<const float *> kp, vp;
  for (size_t i = 0; i < denseK.size(); ++i) {
    kp.push_back(denseK[i].data());
    vp.push_back(denseV[i].data());
  }
  ref::denseAttention(q.data(), kp.data(), vp.data(), qsl.data(),
                      c.seqLens.data(), numSeqs, H, hd, params, want.data());
  ref::pagedAttention(q.data(), cache.view, batch, params, paged.data());
  EXPECT_LE(maxAbsDiff(paged, want), 1e-6f) << "paged vs dense reference";
  if (amx) {
    // The AMX bf16 tile (skipped by the caller on hosts without it): the
    // bf16 tolerance of PagedAttentionTest, relative to max |v|.
    detail::AmxMode saved = detail::setAmxAttentionMode(detail::AmxMode::Force);
    float maxV = 0.0f;
    for (auto &dv : denseV)
      for (float x : dv)
        maxV = std::max(maxV, std::fabs(x));
    std::vector<float> one(outSize, NAN), four(outSize, NAN);
    Status st = pagedAttention(q.data(), cache.view, batch, params, one.data(),
                               serialPool());
    EXPECT_TRUE(st) << st.message();
    EXPECT_TRUE(pagedAttention(q.data(), cache.view, batch, params, four.data(),
                               parallelPool()));
    detail::setAmxAttentionMode(saved);
    EXPECT_LE(maxAbsDiff(one, want), 1.5e-2f * maxV);
    EXPECT_TRUE(bitwiseEqual(one, four));
    return;
  }
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    for (int64_t minRows : {int64_t(0), INT64_MAX, int64_t(1)}) {
      if (isa == Isa::Scalar && minRows != 0)
        continue;
      MinRowsScope rows(minRows);
      std::string what =
          std::string(isaName(isa)) + (minRows == 0           ? ""
                                       : minRows == INT64_MAX ? " rows"
                                                              : " lanes");
      std::vector<float> one(outSize, NAN), four(outSize, NAN);
      Status st = pagedAttention(q.data(), cache.view, batch, params,
                                 one.data(), serialPool());
      ASSERT_TRUE(st) << st.message();
      ASSERT_TRUE(pagedAttention(q.data(), cache.view, batch, params,
                                 four.data(), parallelPool()));
      EXPECT_LE(maxAbsDiff(one, want), tol) << what;
      EXPECT_TRUE(bitwiseEqual(one, four)) << what;
    }
  }
}

TEST(PagedAttentionKivi, DecodeOnBlockBoundaries) {
  Case c;
  c.seqLens = {1, 15, 16, 17, 31, 32, 33, 100, 40};
  c.queryLens = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  c.residentBlocks = {1, 1, 0, 1, 1, 0, 1, 2, 0};
  check(c);
}

TEST(PagedAttentionKivi, PrefillAndQuantizedResidentBoundary) {
  Case c;
  c.seqLens = {15, 16, 17, 48, 70};
  c.queryLens = {15, 16, 17, 48, 30};
  c.residentBlocks = {0, 1, 1, 1, 2};
  check(c);
}

TEST(PagedAttentionKivi, OneTokenAndGqa) {
  Case c;
  c.seqLens = {1};
  c.queryLens = {1};
  c.residentBlocks = {1};
  check(c);
  c.residentBlocks = {0};
  check(c);
  Case g;
  g.seqLens = {70, 9, 40, 12, 1};
  g.queryLens = {30, 1, 4, 0, 1};
  g.residentBlocks = {1, 0, 2, 1, 0};
  g.group = 4;
  g.blockSize = 8;
  check(g);
}

TEST(PagedAttentionKivi, HeadDims) {
  for (int64_t hd : {32, 64, 128}) {
    for (int64_t qg : {int64_t(16), hd, int64_t(4)}) {
      Case c;
      c.headDim = hd;
      c.quantGroup = qg;
      c.group = 3;
      c.seqLens = {70, 40, 9};
      c.queryLens = {70, 1, 5};
      c.residentBlocks = {1, 1, 0};
      c.seed = uint32_t(hd + qg);
      SCOPED_TRACE(std::to_string(hd) + " group " + std::to_string(qg));
      check(c);
    }
  }
  Case odd; // head size not a multiple of 16
  odd.headDim = 36;
  odd.quantGroup = 12;
  odd.seqLens = {50, 7};
  odd.queryLens = {3, 7};
  odd.residentBlocks = {1, 0};
  check(odd);
}

TEST(PagedAttentionKivi, SlidingWindowAndSoftCap) {
  Case c;
  c.window = 17;
  c.softCap = 5.0f;
  c.seqLens = {150, 20, 3};
  c.queryLens = {40, 1, 3};
  c.residentBlocks = {2, 1, 0};
  c.group = 2;
  check(c);
}

TEST(PagedAttentionKivi, LongContextSplitK) {
  Case c;
  c.seqLens = {4096};
  c.queryLens = {1};
  c.residentBlocks = {4};
  c.numKvHeads = 2;
  c.group = 3;
  c.blockSize = 32;
  EXPECT_GT(detail::splitRangeCount(0, 4095), 1);
  check(c, 1e-5f);
  c.queryLens = {8};
  c.numKvHeads = 1;
  c.group = 4;
  check(c, 1e-5f);
}

TEST(PagedAttentionKivi, AmxTile) {
  detail::AmxMode saved = detail::setAmxAttentionMode(detail::AmxMode::Force);
  bool usable = detail::amxAttentionUsable(64, true);
  detail::setAmxAttentionMode(saved);
  if (!usable)
    GTEST_SKIP() << "no AMX-BF16 on this host";
  Case c;
  c.seqLens = {300, 70, 17};
  c.queryLens = {300, 40, 17};
  c.residentBlocks = {2, 1, 0};
  c.group = 2;
  check(c, 0, true);
  c.headDim = 128;
  c.window = 100;
  c.softCap = 5.0f;
  check(c, 0, true);
}

TEST(PagedAttentionKivi, RejectsEntriesOutsideThePools) {
  KiviCache cache(2, 4, 1, 32, 32, 1);
  cache.resident = {0, 1};
  std::vector<int32_t> table = {0, 1}, qsl = {0, 1}, lens = {8};
  RaggedBatch batch;
  batch.numTokens = 1;
  batch.numSeqs = 1;
  batch.queryStartLoc = qsl.data();
  batch.seqLens = lens.data();
  batch.blockTables = table.data();
  batch.maxBlocksPerSeq = 2;
  AttentionParams params;
  params.numHeads = 1;
  std::vector<float> q(32, 0.5f), out(32);
  Status st = pagedAttention(q.data(), cache.view, batch, params, out.data());
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("residual entry 1"), std::string::npos)
      << st.message();
}

} // namespace
