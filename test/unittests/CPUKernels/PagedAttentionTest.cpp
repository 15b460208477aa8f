//===- PagedAttentionTest.cpp - Ragged paged attention --------------------===//
//
// Each case writes random K/V for every sequence into a cache whose blocks
// are handed out in shuffled order (through kvWrite), then checks the kernel
// against the paged reference and against dense attention on the unpaged
// K/V, on both ISAs (AVX-512 with its dispatcher's choice and with each of
// its two formulations forced for every tile) and with one and four
// threads (bitwise identical). The AMX bf16 tile (PagedAttentionAmx) is
// checked against the same reference with a bf16 tolerance.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/Reference/Reference.h"

#include <algorithm>
#include <climits>
#include <tuple>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

struct Case {
  std::vector<int32_t> seqLens;
  std::vector<int32_t> queryLens;
  int64_t blockSize = 16;
  int64_t numKvHeads = 2;
  int64_t group = 1; ///< query heads per kv head
  int64_t headDim = 64;
  int64_t window = 0;
  float softCap = 0.0f;
  DType dtype = DType::F32;
  /// int8 / int4 params group; -1: headDim for int8, 32 (or headDim when
  /// 32 does not divide it) for int4.
  int64_t quantGroup = -1;
  /// Some K/V head rows constant, zero, or four times larger, so that
  /// quantized caches meet constant groups and several scales.
  bool edgeRows = false;
  uint32_t seed = 1;
};

struct Scenario {
  std::vector<uint8_t> kPool, vPool, kParams, vParams;
  std::vector<float> kScale, vScale;
  KVCacheView cache;
  std::vector<int32_t> queryStartLoc, blockTables;
  RaggedBatch batch;
  AttentionParams params;
  std::vector<float> q;
  std::vector<std::vector<float>> denseK, denseV; // rounded to the dtype
};

int64_t quantGroupOf(const Case &c) {
  if (!hasGroupParams(c.dtype))
    return 0;
  if (c.quantGroup > 0)
    return c.quantGroup;
  if (c.dtype == DType::I8 || c.headDim % 32 != 0)
    return c.headDim;
  return 32;
}

/// Rows [len][numKvHeads][headDim] as the cache gives them back: each head's
/// row through quantizeKvRow and dequantizeKvRow (the definitions), so the
/// reference attention sees exactly the values the kernels read.
std::vector<float> storedValues(const std::vector<float> &x,
                                const KVCacheView &cache,
                                const std::vector<float> &scales) {
  const int64_t hd = cache.headDim;
  std::vector<uint8_t> data(cache.headRowBytes());
  std::vector<uint16_t> params(
      size_t(kvRowParams(cache.dtype, hd, cache.group)) + 1);
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / size_t(hd); ++r) {
    float scale = scales.empty() ? 1.0f : scales[r % size_t(cache.numKvHeads)];
    quantizeKvRow(x.data() + r * size_t(hd), hd, cache.dtype, cache.group,
                  scale, data.data(), params.data());
    dequantizeKvRow(data.data(), params.data(), hd, cache.dtype, cache.group,
                    scale, out.data() + r * size_t(hd));
  }
  return out;
}

/// Constant, zero and larger head rows among random ones.
void addEdgeRows(std::vector<float> &x, int64_t hd) {
  for (size_t r = 0; r < x.size() / size_t(hd); ++r) {
    float *row = x.data() + r * size_t(hd);
    for (int64_t d = 0; d < hd; ++d) {
      if (r % 5 == 1)
        row[d] = 0.375f;
      else if (r % 7 == 2)
        row[d] = 0.0f;
      else if (r % 11 == 3)
        row[d] *= 4.0f;
      else if (r % 13 == 4 && d < hd / 2)
        row[d] = -0.1f; // half a row constant: one constant int4 group
    }
  }
}

void build(const Case &c, Scenario &s) {
  int64_t numSeqs = int64_t(c.seqLens.size());
  int64_t row = c.numKvHeads * c.headDim;
  int64_t maxBlocks = 1, totalBlocks = 0;
  for (int32_t len : c.seqLens) {
    int64_t b = (len + c.blockSize - 1) / c.blockSize;
    maxBlocks = std::max(maxBlocks, b + 1); // a spare column, left invalid
    totalBlocks += b;
  }
  s.cache.numBlocks = totalBlocks + 3; // some blocks belong to no one
  s.cache.blockSize = c.blockSize;
  s.cache.numKvHeads = c.numKvHeads;
  s.cache.headDim = c.headDim;
  s.cache.dtype = c.dtype;
  s.cache.group = quantGroupOf(c);
  s.kPool.assign(s.cache.poolBytes(), 0);
  s.vPool.assign(s.cache.poolBytes(), 0);
  s.cache.k = s.kPool.data();
  s.cache.v = s.vPool.data();
  s.kParams.assign(s.cache.paramPoolBytes(), 0);
  s.vParams.assign(s.cache.paramPoolBytes(), 0);
  if (hasGroupParams(c.dtype)) {
    s.cache.kParams = s.kParams.data();
    s.cache.vParams = s.vParams.data();
  }
  s.kScale.clear();
  s.vScale.clear();
  if (isFp8(c.dtype)) {
    // Values in [-1, 1] over scales that put them at codes up to ~100-400.
    for (int64_t h = 0; h < c.numKvHeads; ++h) {
      s.kScale.push_back(float(h % 3 + 1) / 384.0f);
      s.vScale.push_back(1.0f / float(100 + 37 * h));
    }
    s.cache.kScale = s.kScale.data();
    s.cache.vScale = s.vScale.data();
  }

  std::vector<int32_t> ids(size_t(s.cache.numBlocks));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = int32_t(i);
  std::mt19937 rng(c.seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  s.blockTables.assign(size_t(numSeqs * maxBlocks), -1);
  size_t next = 0;
  std::vector<int64_t> slots;
  std::vector<float> kRows, vRows;
  s.denseK.clear();
  s.denseV.clear();
  for (int64_t q = 0; q < numSeqs; ++q) {
    int64_t len = c.seqLens[size_t(q)];
    for (int64_t b = 0; b * c.blockSize < len; ++b)
      s.blockTables[size_t(q * maxBlocks + b)] = ids[next++];
    auto k = randomVector(size_t(len * row), c.seed * 100 + uint32_t(q));
    auto v = randomVector(size_t(len * row), c.seed * 200 + uint32_t(q));
    if (c.edgeRows) {
      addEdgeRows(k, c.headDim);
      addEdgeRows(v, c.headDim);
    }
    for (int64_t p = 0; p < len; ++p)
      slots.push_back(
          int64_t(s.blockTables[size_t(q * maxBlocks + p / c.blockSize)]) *
              c.blockSize +
          p % c.blockSize);
    kRows.insert(kRows.end(), k.begin(), k.end());
    vRows.insert(vRows.end(), v.begin(), v.end());
    s.denseK.push_back(storedValues(k, s.cache, s.kScale));
    s.denseV.push_back(storedValues(v, s.cache, s.vScale));
  }
  Status st = kvWrite(s.cache, kRows.data(), row, vRows.data(), row,
                      slots.data(), int64_t(slots.size()));
  ASSERT_TRUE(st) << st.message();

  s.queryStartLoc = {0};
  for (int32_t ql : c.queryLens)
    s.queryStartLoc.push_back(s.queryStartLoc.back() + ql);
  s.batch.numTokens = s.queryStartLoc.back();
  s.batch.numSeqs = numSeqs;
  s.batch.queryStartLoc = s.queryStartLoc.data();
  s.batch.seqLens = c.seqLens.data();
  s.batch.blockTables = s.blockTables.data();
  s.batch.maxBlocksPerSeq = maxBlocks;
  s.params.numHeads = c.numKvHeads * c.group;
  s.params.scale = 1.0f / std::sqrt(float(c.headDim));
  s.params.slidingWindow = c.window;
  s.params.softCap = c.softCap;
  s.q = randomVector(size_t(s.batch.numTokens * s.params.numHeads * c.headDim),
                     c.seed * 300, -2, 2);
}

/// Forces the AVX-512 formulation for the scope (0: leave the default).
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

void check(const Case &c, float tol = 2e-5f) {
  Scenario s;
  build(c, s);
  if (testing::Test::HasFatalFailure())
    return;
  size_t outSize = s.q.size();
  std::vector<float> want(outSize), dense(outSize);
  ref::pagedAttention(s.q.data(), s.cache, s.batch, s.params, want.data());
  std::vector<const float *> kp, vp;
  for (size_t i = 0; i < s.denseK.size(); ++i) {
    kp.push_back(s.denseK[i].data());
    vp.push_back(s.denseV[i].data());
  }
  ref::denseAttention(s.q.data(), kp.data(), vp.data(), s.queryStartLoc.data(),
                      c.seqLens.data(), int64_t(c.seqLens.size()), c.numKvHeads,
                      c.headDim, s.params, dense.data());
  EXPECT_LE(maxAbsDiff(want, dense), 1e-6f) << "paged vs dense reference";
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    // 0: the dispatcher's choice; then every tile row-oriented, then every
    // tile transposed.
    for (int64_t minRows : {int64_t(0), INT64_MAX, int64_t(1)}) {
      if (isa == Isa::Scalar && minRows != 0)
        continue;
      MinRowsScope rows(minRows);
      std::string what =
          std::string(isaName(isa)) + (minRows == 0           ? ""
                                       : minRows == INT64_MAX ? " rows"
                                                              : " lanes");
      std::vector<float> one(outSize, NAN), four(outSize, NAN);
      Status st = pagedAttention(s.q.data(), s.cache, s.batch, s.params,
                                 one.data(), serialPool());
      ASSERT_TRUE(st) << st.message();
      ASSERT_TRUE(pagedAttention(s.q.data(), s.cache, s.batch, s.params,
                                 four.data(), parallelPool()));
      EXPECT_LE(maxAbsDiff(one, want), tol) << what;
      EXPECT_TRUE(bitwiseEqual(one, four)) << what;
    }
  }
}

TEST(PagedAttention, DecodeBatch) {
  Case c;
  c.seqLens = {1, 15, 16, 17, 31, 32, 33, 100};
  c.queryLens = {1, 1, 1, 1, 1, 1, 1, 1};
  check(c);
}

TEST(PagedAttention, PrefillOnBlockBoundaries) {
  Case c;
  c.seqLens = {15, 16, 17, 48};
  c.queryLens = {15, 16, 17, 48};
  check(c);
}

// Tests a mixed step: a prefill chunk of a longer prompt, decode tokens,
// several (speculative) tokens, and a sequence with no query tokens.
TEST(PagedAttention, MixedRaggedBatch) {
  Case c;
  c.seqLens = {70, 9, 40, 12, 1};
  c.queryLens = {30, 1, 4, 0, 1};
  c.group = 2;
  check(c);
}

TEST(PagedAttention, BlockSizes) {
  for (int64_t bs : {8, 16, 256}) {
    Case c;
    c.blockSize = bs;
    c.seqLens = {int32_t(bs - 1), int32_t(bs), int32_t(bs + 1),
                 int32_t(2 * bs + 3)};
    c.queryLens = {3, int32_t(bs), 1, 5};
    c.seed = uint32_t(bs);
    SCOPED_TRACE(bs);
    check(c);
  }
}

TEST(PagedAttention, GqaRatios) {
  for (int64_t g : {1, 2, 4, 6, 7, 8}) {
    Case c;
    c.group = g;
    c.numKvHeads = 2;
    c.headDim = 32;
    c.seqLens = {37, 5};
    c.queryLens = {9, 2};
    c.seed = uint32_t(g);
    SCOPED_TRACE(g);
    check(c);
  }
}

// Tests windows smaller than the context (including one inside a single
// chunk and one that makes early blocks unread) and larger than it.
TEST(PagedAttention, SlidingWindow) {
  for (int64_t window : {1, 5, 17, 64, 10000}) {
    Case c;
    c.window = window;
    c.seqLens = {150, 20, 3};
    c.queryLens = {40, 1, 3};
    c.group = 2;
    c.seed = uint32_t(window);
    SCOPED_TRACE(window);
    check(c);
  }
}

// Tests that blocks wholly outside every query's window may be invalid, as
// vLLM frees them.
TEST(PagedAttention, SlidingWindowSkipsFreedBlocks) {
  Case c;
  c.window = 16;
  c.seqLens = {100};
  c.queryLens = {2};
  Scenario s;
  build(c, s);
  std::vector<float> before(s.q.size()), after(s.q.size());
  ASSERT_TRUE(
      pagedAttention(s.q.data(), s.cache, s.batch, s.params, before.data()));
  for (int i = 0; i < 4; ++i) // keys 0..63; the first query reads from 83
    s.blockTables[size_t(i)] = -1;
  Status st =
      pagedAttention(s.q.data(), s.cache, s.batch, s.params, after.data());
  ASSERT_TRUE(st) << st.message();
  EXPECT_TRUE(bitwiseEqual(before, after));
}

TEST(PagedAttention, SoftCap) {
  Case c;
  c.softCap = 5.0f;
  c.seqLens = {50, 8};
  c.queryLens = {20, 1};
  c.group = 4;
  check(c);
}

TEST(PagedAttention, NarrowCacheTypes) {
  for (DType t : {DType::BF16, DType::F16}) {
    Case c;
    c.dtype = t;
    c.seqLens = {33, 64, 7};
    c.queryLens = {33, 1, 2};
    c.group = 2;
    c.headDim = 128;
    SCOPED_TRACE(dtypeName(t));
    check(c);
  }
}

// Tests head sizes that are not a multiple of the 16-lane vector.
TEST(PagedAttention, OddHeadDim) {
  for (int64_t hd : {8, 80, 96}) {
    Case c;
    c.headDim = hd;
    c.seqLens = {21};
    c.queryLens = {4};
    SCOPED_TRACE(hd);
    check(c);
  }
}

// Tests a long context: online softmax over 4096 keys, decode and a chunk.
TEST(PagedAttention, LongContext) {
  Case c;
  c.seqLens = {4096, 4096};
  c.queryLens = {1, 8};
  c.numKvHeads = 1;
  c.group = 4;
  c.blockSize = 32;
  check(c, 1e-5f);
}

// Tests head sizes from 8 to 256, multiples of 16 and not, on decode and on
// prefill tiles of one, several and a full vector of rows.
TEST(PagedAttention, HeadDims) {
  for (int64_t hd : {8, 24, 64, 80, 128, 256}) {
    Case c;
    c.headDim = hd;
    c.group = 3;
    c.seqLens = {70, 40, 9};
    c.queryLens = {70, 1, 5};
    c.seed = uint32_t(hd);
    SCOPED_TRACE(hd);
    check(c);
  }
}

// Tests GQA groups whose rows do not fill vectors (3), fill them exactly
// (4, 8) and exceed one 64-row pass per token (80), with prefill and decode.
TEST(PagedAttention, GroupsAndPasses) {
  for (int64_t g : {1, 3, 4, 8, 80}) {
    Case c;
    c.group = g;
    c.numKvHeads = g == 80 ? 1 : 4;
    c.headDim = 40;
    c.seqLens = {100, 77, 20};
    c.queryLens = {100, 1, 3};
    c.seed = uint32_t(g) + 7;
    SCOPED_TRACE(g);
    check(c);
  }
}

// Tests rows that see no key of a whole key chunk: a window much narrower
// than the tile, with and without soft-cap, so later rows skip the early
// chunks' keys and earlier rows the later ones.
TEST(PagedAttention, RowsWithoutKeysInAChunk) {
  for (int64_t window : {1, 3, 40}) {
    Case c;
    c.window = window;
    c.group = 4;
    c.seqLens = {300, 64};
    c.queryLens = {200, 64};
    c.seed = uint32_t(window) + 50;
    SCOPED_TRACE(window);
    check(c);
    c.softCap = 2.0f;
    check(c);
  }
}

// Tests soft-cap on decode and on a prefill that crosses chunks, with
// scores large enough that the cap matters.
TEST(PagedAttention, SoftCapLongPrefill) {
  Case c;
  c.softCap = 1.5f;
  c.headDim = 128;
  c.group = 2;
  c.seqLens = {150, 30};
  c.queryLens = {150, 1};
  check(c);
}

// Tests narrow caches on the transposed path with tails in every dimension.
TEST(PagedAttention, NarrowCacheTypesPrefill) {
  for (DType t : {DType::BF16, DType::F16}) {
    Case c;
    c.dtype = t;
    c.seqLens = {131, 20};
    c.queryLens = {100, 1};
    c.group = 3;
    c.headDim = 24;
    c.blockSize = 8;
    c.window = 50;
    SCOPED_TRACE(dtypeName(t));
    check(c);
  }
}

// Tests a long prefill chunk at the end of a long context.
TEST(PagedAttention, LongContextPrefill) {
  Case c;
  c.seqLens = {4096};
  c.queryLens = {70};
  c.numKvHeads = 1;
  c.group = 3;
  c.blockSize = 128;
  check(c, 1e-5f);
}

/// Split-K decode: one sequence of each context length (so few work items
/// and several key ranges), checked like every case against the reference
/// and across pool sizes.
void checkSplit(Case c, int64_t wantSplits) {
  ASSERT_EQ(c.seqLens.size(), size_t(1));
  int64_t tokens = c.queryLens[0], len = c.seqLens[0];
  int64_t firstPos = len - tokens;
  int64_t lo =
      c.window > 0 && firstPos - c.window + 1 > 0 ? firstPos - c.window + 1 : 0;
  EXPECT_EQ(detail::splitRangeCount(lo, len - 1), wantSplits) << "ranges";
  check(c);
}

// Tests contexts that give one, two and many key ranges, ending inside a
// block, on block boundaries and on range boundaries, decode and
// speculative tokens (a verify step's up to 17 tokens split as decode
// does), GQA.
TEST(PagedAttention, SplitKDecode) {
  static_assert(detail::kSplitRangeKeys == 1024, "cases assume 1024");
  struct {
    int32_t len, queryLen;
    int64_t splits;
  } cases[] = {{1, 1, 1},     {255, 1, 1},  {1024, 1, 1}, {1025, 1, 2},
               {1026, 2, 2},  {1040, 1, 2}, {1056, 3, 2}, {2000, 4, 2},
               {2049, 1, 3},  {4096, 1, 4}, {1040, 5, 2}, {2064, 17, 3},
               {1032, 17, 2}, {1000, 17, 1}};
  for (auto &t : cases) {
    Case c;
    c.seqLens = {t.len};
    c.queryLens = {t.queryLen};
    c.numKvHeads = 2;
    c.group = 3;
    c.seed = uint32_t(t.len + t.queryLen);
    SCOPED_TRACE(t.len);
    SCOPED_TRACE(t.queryLen);
    checkSplit(c, t.splits);
  }
}

// Tests split-K with a window (the ranges cover only the window's keys, and
// the tokens' windows start at different keys), soft-cap, a narrow cache
// and block sizes that do not divide the ranges.
TEST(PagedAttention, SplitKWindowSoftCapTypes) {
  Case c;
  c.seqLens = {2500};
  c.queryLens = {3};
  c.numKvHeads = 1;
  c.group = 4;
  c.window = 700;
  c.blockSize = 24;
  checkSplit(c, 2);
  c.softCap = 3.0f;
  checkSplit(c, 2);
  c.window = 0;
  c.dtype = DType::BF16;
  c.blockSize = 8;
  checkSplit(c, 3);
}

// Tests that the ranges follow from the keys alone, and that mixed batches
// split only their decode-like sequences (a prefill chunk of 18+ tokens is
// never split).
TEST(PagedAttention, SplitKRangesAreAbsolute) {
  EXPECT_EQ(detail::splitRangeCount(0, 1023), 1);
  EXPECT_EQ(detail::splitRangeCount(0, 1024), 2);
  EXPECT_EQ(detail::splitRangeCount(1000, 1030), 2);
  EXPECT_EQ(detail::splitRangeCount(1030, 2000), 1);
  EXPECT_EQ(detail::splitRangeCount(5, 4), 1);
  Case c;
  c.seqLens = {1900, 600, 1100};
  c.queryLens = {1, 100, 17};
  c.numKvHeads = 1;
  c.group = 2;
  check(c);
}

// The row tile sums each query row in one order whatever rows share its
// tile, on every ISA (a request then samples the same tokens alone as
// batched): the last token of a 4-token chunk gives bitwise the output of
// the same token decoded alone, for caches read in registers (f32, bf16,
// int8 with its params folded) as for the others, and for GQA groups that
// the chunk splits across row passes differently (7 rows: 4 + 3 alone,
// 3 + 4 as the chunk's last token).
/// Expects the last query token of `c`'s chunk (one sequence) to give
/// bitwise what it gives alone over the same cache, on every ISA, with
/// bf16 products allowed or not and the AVX-512 formulation forced to the
/// row tile or left to the dispatcher.
void expectLastRowAsAlone(const Case &c, bool allowBf16, bool rowTile) {
  Scenario chunk;
  build(c, chunk);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  chunk.params.allowBf16 = allowBf16;
  Scenario alone;
  build(c, alone);
  alone.params.allowBf16 = allowBf16;
  const int64_t rowFloats = alone.params.numHeads * c.headDim;
  std::vector<float> lastQ(chunk.q.end() - rowFloats, chunk.q.end());
  alone.queryStartLoc = {0, 1};
  alone.batch.numTokens = 1;
  alone.batch.queryStartLoc = alone.queryStartLoc.data();
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    MinRowsScope rows(rowTile ? INT64_MAX : 0);
    std::vector<float> all(chunk.q.size(), NAN), one(size_t(rowFloats), NAN);
    ASSERT_TRUE(pagedAttention(chunk.q.data(), chunk.cache, chunk.batch,
                               chunk.params, all.data(), serialPool()));
    ASSERT_TRUE(pagedAttention(lastQ.data(), alone.cache, alone.batch,
                               alone.params, one.data(), serialPool()));
    std::vector<float> last(all.end() - rowFloats, all.end());
    EXPECT_TRUE(bitwiseEqual(last, one))
        << isaName(isa) << " " << dtypeName(c.dtype) << " group " << c.group
        << ": max diff " << maxAbsDiff(last, one);
  }
}

TEST(PagedAttention, RowTileRowsDoNotDependOnTheirNeighbours) {
  Case c;
  c.seqLens = {140}; // three chunks of keys
  c.queryLens = {4};
  for (auto [group, dtype] :
       {std::pair{int64_t(1), DType::F32}, std::pair{int64_t(3), DType::F32},
        std::pair{int64_t(3), DType::I8}, std::pair{int64_t(2), DType::BF16},
        std::pair{int64_t(7), DType::I8}, std::pair{int64_t(6), DType::F32}}) {
    c.group = group;
    c.dtype = dtype;
    expectLastRowAsAlone(c, /*allowBf16=*/false, /*rowTile=*/true);
  }
}

constexpr DType kCacheTypes[] = {DType::F32,     DType::BF16,    DType::F16,
                                 DType::FP8E4M3, DType::FP8E5M2, DType::I8,
                                 DType::I4};

/// The case on every cache type: the kernels read exactly the values the
/// reference formats give back, so the tolerance is the f32 one.
void checkTypes(Case c, float tol = 2e-5f) {
  for (DType t : kCacheTypes) {
    c.dtype = t;
    SCOPED_TRACE(dtypeName(t));
    check(c, tol);
  }
}

TEST(PagedAttentionQuant, DecodeOnBlockBoundaries) {
  Case c;
  c.seqLens = {1, 15, 16, 17, 31, 32, 33, 100};
  c.queryLens = {1, 1, 1, 1, 1, 1, 1, 1};
  c.edgeRows = true;
  checkTypes(c);
}

TEST(PagedAttentionQuant, PrefillOnBlockBoundaries) {
  Case c;
  c.seqLens = {15, 16, 17, 48};
  c.queryLens = {15, 16, 17, 48};
  c.blockSize = 16;
  checkTypes(c);
}

// Tests a mixed step (prefill chunk, decode, speculative tokens, a sequence
// without queries) with GQA and edge rows.
TEST(PagedAttentionQuant, MixedBatchGqa) {
  Case c;
  c.seqLens = {70, 9, 40, 12, 1};
  c.queryLens = {30, 1, 4, 0, 1};
  c.group = 4;
  c.blockSize = 8;
  c.edgeRows = true;
  checkTypes(c);
}

// Head dims that split into whole vectors, and ones that do not: 20 is not
// a multiple of AVX2's 8 lanes and 40 not of AVX-512's 16, so those rows
// take the widening path.
TEST(PagedAttentionQuant, HeadDims) {
  for (int64_t hd : {20, 32, 40, 64, 128}) {
    Case c;
    c.headDim = hd;
    c.group = 3;
    c.seqLens = {70, 40, 9};
    c.queryLens = {70, 1, 5};
    c.seed = uint32_t(hd) + 3;
    SCOPED_TRACE(hd);
    checkTypes(c);
  }
}

TEST(PagedAttentionQuant, SlidingWindowAndSoftCap) {
  Case c;
  c.window = 17;
  c.softCap = 5.0f;
  c.seqLens = {150, 20, 3};
  c.queryLens = {40, 1, 3};
  c.group = 2;
  c.edgeRows = true;
  checkTypes(c);
}

// Tests a long decode that split-K cuts into key ranges, and a chunk at
// the end of the same context.
TEST(PagedAttentionQuant, LongContextSplitK) {
  Case c;
  c.seqLens = {4096};
  c.queryLens = {1};
  c.numKvHeads = 2;
  c.group = 3;
  c.blockSize = 32;
  EXPECT_GT(detail::splitRangeCount(0, 4095), 1);
  checkTypes(c, 1e-5f);
  c.queryLens = {8};
  c.numKvHeads = 1;
  c.group = 4;
  checkTypes(c, 1e-5f);
}

TEST(PagedAttentionQuant, EmptyBatchAndOneToken) {
  Case empty;
  empty.seqLens = {};
  empty.queryLens = {};
  checkTypes(empty);
  Case one;
  one.seqLens = {1};
  one.queryLens = {1};
  one.edgeRows = true;
  checkTypes(one);
}

// Tests params groups of several sizes, including ones that are not a
// multiple of the 16-lane vector and head sizes that are not either.
TEST(PagedAttentionQuant, ParamGroups) {
  struct {
    DType type;
    int64_t headDim, group;
  } cases[] = {{DType::I8, 64, 16},  {DType::I8, 64, 32}, {DType::I8, 64, 8},
               {DType::I4, 64, 8},   {DType::I4, 64, 16}, {DType::I4, 64, 64},
               {DType::I8, 24, 24},  {DType::I4, 24, 12}, {DType::I4, 24, 2},
               {DType::I8, 80, 40},  {DType::I4, 80, 80}, {DType::I8, 128, 128},
               {DType::I4, 128, 32}, {DType::I4, 256, 32}};
  for (auto &t : cases) {
    Case c;
    c.dtype = t.type;
    c.headDim = t.headDim;
    c.quantGroup = t.group;
    c.group = 3;
    c.seqLens = {45, 33};
    c.queryLens = {45, 1};
    c.edgeRows = true;
    SCOPED_TRACE(std::string(dtypeName(t.type)) + " hd " +
                 std::to_string(t.headDim) + " group " +
                 std::to_string(t.group));
    check(c);
  }
}

// Tests that a NaN or an inf stored in a quantized cache reaches the
// outputs of the queries that see it (its group dequantizes to NaN).
// (Earlier queries of the same tile may see it too: masked keys meet p = 0
// in p.V, see docs/cpu-kernels.md, Left for later.)
TEST(PagedAttentionQuant, NonFiniteRowsStayVisible) {
  for (DType t : {DType::FP8E4M3, DType::I8, DType::I4}) {
    Case c;
    c.dtype = t;
    c.seqLens = {20};
    c.queryLens = {20};
    c.numKvHeads = 1;
    Scenario s;
    build(c, s);
    // Rewrite position 10's row with an inf in V.
    std::vector<float> kRow(size_t(c.headDim), 0.5f), vRow(kRow);
    vRow[3] = INFINITY;
    int64_t slot = int64_t(s.blockTables[0]) * c.blockSize + 10;
    ASSERT_TRUE(kvWrite(s.cache, kRow.data(), c.headDim, vRow.data(), c.headDim,
                        &slot, 1));
    for (Isa isa : hostIsas()) {
      IsaScope scope(isa);
      std::vector<float> out(s.q.size());
      ASSERT_TRUE(
          pagedAttention(s.q.data(), s.cache, s.batch, s.params, out.data()));
      // Element 3 is NaN in every format (alone in fp8, with its group
      // in int8 / int4).
      for (int64_t tok = 10; tok < 20; ++tok)
        ASSERT_FALSE(std::isfinite(out[size_t(tok * c.headDim + 3)]))
            << dtypeName(t) << " " << isaName(isa) << " token " << tok;
    }
  }
}

// Tests that a NaN key row (what a NaN hidden state writes: every element)
// and a NaN query row make the outputs that see them non-finite, decoding,
// verifying and prefilling, on every path and cache type, so the engine's
// check refuses the step. On AVX-512 the exponential once clamped NaN to
// its lower bound: the NaN key's weight became 0, the int8 row tile
// skipped it, and decoded rows came out finite and wrong.
TEST(PagedAttention, NaNKeysAndQueriesReachTheOutputs) {
  for (DType t :
       {DType::F32, DType::BF16, DType::FP8E4M3, DType::I8, DType::I4})
    for (int32_t queryLen : {1, 5, 20})
      for (bool nanKey : {true, false}) {
        Case c;
        c.dtype = t;
        c.seqLens = {20};
        c.queryLens = {queryLen};
        c.numKvHeads = 2;
        c.group = 2;
        Scenario s;
        build(c, s);
        const int64_t rowFloats = c.numKvHeads * c.group * c.headDim;
        const int64_t lastToken = queryLen - 1;
        if (nanKey) { // position 2
          std::vector<float> kRow(size_t(c.numKvHeads * c.headDim), NAN);
          int64_t slot = int64_t(s.blockTables[0]) * c.blockSize + 2;
          ASSERT_TRUE(kvWrite(s.cache, kRow.data(), int64_t(kRow.size()),
                              kRow.data(), int64_t(kRow.size()), &slot, 1));
        } else {
          for (int64_t d = 0; d < rowFloats; ++d)
            s.q[size_t(lastToken * rowFloats + d)] = NAN;
        }
        for (Isa isa : hostIsas()) {
          IsaScope scope(isa);
          std::vector<float> out(s.q.size());
          ASSERT_TRUE(pagedAttention(s.q.data(), s.cache, s.batch, s.params,
                                     out.data()));
          // Tokens at positions 2 on see the key (causal).
          const int64_t firstSeeing = std::max<int64_t>(0, 2 - (20 - queryLen));
          for (int64_t tok = nanKey ? firstSeeing : lastToken; tok <= lastToken;
               ++tok)
            for (int64_t d = 0; d < rowFloats; ++d)
              ASSERT_FALSE(std::isfinite(out[size_t(tok * rowFloats + d)]))
                  << dtypeName(t) << " " << isaName(isa) << " query length "
                  << queryLen << (nanKey ? " NaN key" : " NaN query")
                  << " token " << tok << " element " << d;
        }
      }
}

/// Forces the AMX tile's mode for the scope.
class AmxScope {
public:
  explicit AmxScope(detail::AmxMode mode)
      : saved(detail::setAmxAttentionMode(mode)) {}
  ~AmxScope() { detail::setAmxAttentionMode(saved); }

private:
  detail::AmxMode saved;
};

/// The AMX tile against the f32 reference. Both products take bf16 inputs
/// (8 significant bits, unit roundoff u = 2^-8): a score is off by at most
/// 2u sum_d |q_d k_d| scale, p by that relative error, and p and v are
/// rounded again before p.V, so
///   |dout| <= (4u sum_d |q_d k_d| scale + 2u) max|v|.
/// With these inputs (|q| <= 2, |k| <= 1, scale 1/sqrt(D)) that worst case
/// is loose (~0.07 max|v| at D = 64); the roundings are independent, so
/// the typical score error is ~sqrt(D) times smaller (~2e-3) and the
/// observed output error is 1e-3..4e-3 max|v|. The tolerance 1.5e-2 max|v|
/// keeps headroom for longer sums while a masking, merge or layout error
/// is of the order of max|v|.
constexpr float kAmxTol = 1.5e-2f;

void checkAmx(const Case &c, bool expectAmx = true) {
  AmxScope force(detail::AmxMode::Force);
  if (!detail::amxAttentionUsable(64, true))
    GTEST_SKIP() << "no AMX-BF16 on this host";
  Scenario s;
  build(c, s);
  if (testing::Test::HasFatalFailure())
    return;
  size_t outSize = s.q.size();
  std::vector<float> want(outSize);
  ref::pagedAttention(s.q.data(), s.cache, s.batch, s.params, want.data());
  float maxV = 0.0f;
  for (auto &v : s.denseV)
    for (float x : v)
      maxV = std::max(maxV, std::fabs(x));

  std::vector<float> one(outSize, NAN), four(outSize, NAN), f32(outSize, NAN);
  Status st = pagedAttention(s.q.data(), s.cache, s.batch, s.params, one.data(),
                             serialPool());
  ASSERT_TRUE(st) << st.message();
  ASSERT_TRUE(pagedAttention(s.q.data(), s.cache, s.batch, s.params,
                             four.data(), parallelPool()));
  float err = maxAbsDiff(one, want);
  if (std::getenv("FOLIO_TEST_PRINT_ERR"))
    std::printf("amx err %.3g of max|v|\n", err / maxV);
  EXPECT_LE(err, kAmxTol * maxV);
  EXPECT_TRUE(bitwiseEqual(one, four));
  {
    AmxScope off(detail::AmxMode::Off);
    ASSERT_TRUE(pagedAttention(s.q.data(), s.cache, s.batch, s.params,
                               f32.data(), serialPool()));
  }
  // The bf16 path really ran (or, for shapes it leaves alone, did not).
  EXPECT_EQ(!bitwiseEqual(one, f32), expectAmx);
}

TEST(PagedAttentionAmx, Prefill512Llama) {
  Case c;
  c.seqLens = {512};
  c.queryLens = {512};
  c.numKvHeads = 2;
  c.group = 3;
  checkAmx(c);
}

// Tests tiles that are not full, a single query row (left to AVX-512) next
// to prefill chunks, and contexts ending on and next to block boundaries.
TEST(PagedAttentionAmx, PartialTilesAndBlockBoundaries) {
  Case c;
  c.seqLens = {1, 16, 32, 33, 47, 300, 100};
  c.queryLens = {1, 16, 32, 33, 11, 70, 100};
  c.group = 3;
  checkAmx(c);
  c.blockSize = 8;
  checkAmx(c);
  Case single;
  single.seqLens = {1, 40};
  single.queryLens = {1, 1};
  checkAmx(single, /*expectAmx=*/false);
}

TEST(PagedAttentionAmx, GqaAndHeadDims) {
  for (int64_t g : {1, 2, 4, 8, 80})
    for (int64_t hd : {32, 64, 96, 128, 256}) {
      if (g == 80 && hd > 64)
        continue;
      Case c;
      c.group = g;
      c.numKvHeads = g == 80 ? 1 : 2;
      c.headDim = hd;
      c.seqLens = {90, 37};
      c.queryLens = {90, 20};
      c.seed = uint32_t(g * 1000 + hd);
      SCOPED_TRACE(g);
      SCOPED_TRACE(hd);
      checkAmx(c);
    }
}

// Tests head sizes the AMX tile does not take: the AVX-512 path, exactly.
TEST(PagedAttentionAmx, OtherHeadDimsFallBack) {
  for (int64_t hd : {24, 80, 512}) {
    Case c;
    c.headDim = hd;
    c.group = 4;
    c.seqLens = {60};
    c.queryLens = {60};
    SCOPED_TRACE(hd);
    checkAmx(c, /*expectAmx=*/false);
  }
}

TEST(PagedAttentionAmx, SlidingWindowAndSoftCap) {
  for (int64_t window : {1, 17, 100, 600}) {
    Case c;
    c.window = window;
    c.group = 4;
    c.seqLens = {700, 64};
    c.queryLens = {300, 64};
    c.seed = uint32_t(window);
    SCOPED_TRACE(window);
    checkAmx(c);
    c.softCap = 2.0f;
    checkAmx(c);
  }
  Case cap;
  cap.softCap = 5.0f;
  cap.group = 3;
  cap.headDim = 128;
  cap.seqLens = {200};
  cap.queryLens = {150};
  checkAmx(cap);
}

// Tests a long context (several super-chunks of keys) and split-K tiles
// with enough rows for AMX (a wide GQA group, 3 tokens): partial outputs
// over key ranges.
TEST(PagedAttentionAmx, LongContextAndSplitK) {
  Case c;
  c.seqLens = {2600};
  c.queryLens = {200};
  c.numKvHeads = 1;
  c.group = 4;
  c.blockSize = 32;
  checkAmx(c);
  Case split;
  split.seqLens = {2100};
  split.queryLens = {3};
  split.numKvHeads = 1;
  split.group = 16;
  split.window = 1500;
  checkSplit(split, 3);
  checkAmx(split);
}

TEST(PagedAttentionAmx, NarrowCacheTypes) {
  for (DType t : {DType::BF16, DType::F16}) {
    Case c;
    c.dtype = t;
    c.seqLens = {131, 20};
    c.queryLens = {100, 20};
    c.group = 3;
    c.blockSize = 8;
    SCOPED_TRACE(dtypeName(t));
    checkAmx(c);
  }
}

// Tests the quantized caches through the AMX tile's conversion (the same
// row loader as the AVX-512 tiles).
TEST(PagedAttentionAmx, QuantizedCacheTypes) {
  for (DType t : {DType::FP8E4M3, DType::FP8E5M2, DType::I8, DType::I4}) {
    Case c;
    c.dtype = t;
    c.seqLens = {300, 40};
    c.queryLens = {100, 40};
    c.group = 3;
    c.blockSize = 8;
    c.edgeRows = true;
    SCOPED_TRACE(dtypeName(t));
    checkAmx(c);
  }
}

// Tests that "auto" mode (the default) keeps the f32 path unless the
// caller allows bf16 products.
TEST(PagedAttentionAmx, AutoNeedsAllowBf16) {
  AmxScope automatic(detail::AmxMode::Auto);
  Case c;
  c.seqLens = {100};
  c.queryLens = {100};
  c.group = 2;
  Scenario s;
  build(c, s);
  std::vector<float> plain(s.q.size()), allowed(s.q.size()), f32(s.q.size());
  ASSERT_TRUE(
      pagedAttention(s.q.data(), s.cache, s.batch, s.params, plain.data()));
  {
    AmxScope off(detail::AmxMode::Off);
    ASSERT_TRUE(
        pagedAttention(s.q.data(), s.cache, s.batch, s.params, f32.data()));
  }
  EXPECT_TRUE(bitwiseEqual(plain, f32));
  s.params.allowBf16 = true;
  ASSERT_TRUE(
      pagedAttention(s.q.data(), s.cache, s.batch, s.params, allowed.data()));
  EXPECT_EQ(!bitwiseEqual(allowed, f32),
            detail::amxAttentionUsable(c.headDim, true));
}

// A speculative verify step's rows (a few query tokens of one sequence)
// give bitwise what each token gives decoded alone, with the kernels the
// default settings pick: tiles of 7 tokens by GQA groups of 6 (42 rows)
// would otherwise take the transposed AVX-512 tile and, with bf16 products
// allowed, the AMX one, where one token takes the row tile; with groups of
// 12 both take the transposed one. A prefill-sized chunk keeps AMX.
TEST(PagedAttention, VerifyRowsMatchTheirTokensDecodedAlone) {
  AmxScope automatic(detail::AmxMode::Auto);
  Case c;
  c.seqLens = {60};
  c.queryLens = {7};
  for (auto [group, dtype] :
       {std::pair{int64_t(6), DType::F32}, std::pair{int64_t(6), DType::I8},
        std::pair{int64_t(12), DType::BF16}}) {
    c.group = group;
    c.dtype = dtype;
    expectLastRowAsAlone(c, /*allowBf16=*/true, /*rowTile=*/false);
  }
  // 18 tokens is prefill: AMX where the host has it.
  c.group = 6;
  c.dtype = DType::F32;
  c.queryLens = {18};
  Scenario prefill;
  build(c, prefill);
  prefill.params.allowBf16 = true;
  std::vector<float> amx(prefill.q.size()), f32(prefill.q.size());
  ASSERT_TRUE(pagedAttention(prefill.q.data(), prefill.cache, prefill.batch,
                             prefill.params, amx.data()));
  {
    AmxScope off(detail::AmxMode::Off);
    ASSERT_TRUE(pagedAttention(prefill.q.data(), prefill.cache, prefill.batch,
                               prefill.params, f32.data()));
  }
  EXPECT_EQ(!bitwiseEqual(amx, f32), detail::amxAttentionUsable(64, true));
}

/// Expects every query token of `c`'s decode-like sequences (at most
/// kDecodeLikeTokens tokens in the step) to give bitwise what it gives
/// decoded alone (one query token, the sequence cut at its position) over
/// the same cache, on every ISA with the dispatcher's choices and bf16
/// products allowed: what a speculative greedy run needs to pick the
/// tokens a plain one picks, whatever else its steps batch.
void expectEveryRowAsAlone(const Case &c) {
  Scenario s;
  build(c, s);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  s.params.allowBf16 = true;
  const int64_t rowFloats = s.params.numHeads * c.headDim;
  for (Isa isa : hostIsas()) {
    IsaScope scope(isa);
    std::vector<float> all(s.q.size(), NAN);
    ASSERT_TRUE(pagedAttention(s.q.data(), s.cache, s.batch, s.params,
                               all.data(), parallelPool()));
    for (size_t seq = 0; seq < c.seqLens.size(); ++seq) {
      int64_t q0 = s.queryStartLoc[seq], q1 = s.queryStartLoc[seq + 1];
      if (q1 - q0 > detail::kDecodeLikeTokens)
        continue;
      for (int64_t t = q0; t < q1; ++t) {
        int32_t len = c.seqLens[seq] - int32_t(q1 - 1 - t);
        int32_t startLoc[2] = {0, 1};
        RaggedBatch one = s.batch;
        one.numTokens = 1;
        one.numSeqs = 1;
        one.queryStartLoc = startLoc;
        one.seqLens = &len;
        one.blockTables = s.blockTables.data() + seq * s.batch.maxBlocksPerSeq;
        std::vector<float> alone(size_t(rowFloats), NAN);
        ASSERT_TRUE(pagedAttention(s.q.data() + t * rowFloats, s.cache, one,
                                   s.params, alone.data(), serialPool()));
        std::vector<float> row(all.begin() + t * rowFloats,
                               all.begin() + (t + 1) * rowFloats);
        EXPECT_TRUE(bitwiseEqual(row, alone))
            << isaName(isa) << " " << dtypeName(c.dtype) << " group " << c.group
            << " window " << c.window << ": sequence " << seq << " position "
            << len - 1 << ", max diff " << maxAbsDiff(row, alone);
      }
    }
  }
}

// Tests that a decode or verify step's rows do not depend on the step
// around them: long contexts whose keys split into ranges when decoded
// alone (the range boundaries are absolute, so a verify step crossing one
// and a batch of many sequences split them alike), sliding windows (each
// token's window starts at another key than the step's first token's),
// soft-caps, GQA groups that take the row tile and the transposed one,
// caches read in registers and through scratch, beside prefill chunks.
TEST(PagedAttention, DecodeLikeRowsDoNotDependOnTheStep) {
  AmxScope automatic(detail::AmxMode::Auto);
  Case c;
  c.seqLens = {1030, 1035, 90, 600, 1500};
  c.queryLens = {9, 17, 1, 40, 1};
  c.numKvHeads = 2;
  c.blockSize = 16;
  for (auto [group, dtype, window] :
       {std::tuple{int64_t(1), DType::F32, int64_t(0)},
        std::tuple{int64_t(6), DType::I8, int64_t(0)},
        std::tuple{int64_t(12), DType::BF16, int64_t(0)},
        std::tuple{int64_t(2), DType::F32, int64_t(300)},
        std::tuple{int64_t(12), DType::F32, int64_t(100)},
        std::tuple{int64_t(3), DType::I4, int64_t(70)},
        std::tuple{int64_t(4), DType::FP8E4M3, int64_t(600)}}) {
    c.group = group;
    c.dtype = dtype;
    c.window = window;
    c.softCap = window == 300 ? 20.0f : 0.0f;
    c.headDim = group == 12 ? 32 : 64;
    expectEveryRowAsAlone(c);
  }
}

TEST(PagedAttention, EmptyBatch) {
  Case c;
  c.seqLens = {};
  c.queryLens = {};
  check(c);
  Case one;
  one.seqLens = {1};
  one.queryLens = {1};
  check(one);
}

TEST(PagedAttention, RejectsInvalidInput) {
  Case c;
  c.seqLens = {20, 5};
  c.queryLens = {4, 1};
  Scenario s;
  build(c, s);
  std::vector<float> out(s.q.size());
  auto run = [&]() {
    return pagedAttention(s.q.data(), s.cache, s.batch, s.params, out.data());
  };
  ASSERT_TRUE(run());

  s.params.numHeads = 3; // not a multiple of 2 kv heads
  Status st = run();
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("multiple"), std::string::npos);
  s.params.numHeads = 2;

  s.queryStartLoc[2] = 4; // != numTokens
  EXPECT_FALSE(run());
  s.queryStartLoc[2] = 5;

  c.seqLens[1] = 0; // shorter than its query
  EXPECT_FALSE(run());
  c.seqLens[1] = 5;

  int32_t saved = s.blockTables[0];
  s.blockTables[0] = int32_t(s.cache.numBlocks);
  st = run();
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("block table"), std::string::npos);
  s.blockTables[0] = saved;

  c.seqLens[0] = 1000; // more blocks than the table holds
  EXPECT_FALSE(run());
  c.seqLens[0] = 20;

  s.params.softCap = -1.0f;
  EXPECT_FALSE(run());
  s.params.softCap = 0.0f;
  EXPECT_TRUE(run());
}

} // namespace
