//===- DataPathTest.cpp - Fast paths of the elementwise and copy steps ----===//
//
// Each fast path (coalesced broadcasts, row-copy transposes and slices,
// views for identity permutations) against a per-element reference that
// indexes the way the ONNX spec reads, over random shapes, every supported
// element type, odd sizes and empty tensors; and 1 vs 4 threads bit for bit.
//
//===----------------------------------------------------------------------===//

#include "test/unittests/Executor/RunStep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

using namespace folio;
using namespace folio::exec;

namespace {

cpu::ThreadPool &pool1() {
  static cpu::ThreadPool p(1);
  return p;
}
cpu::ThreadPool &pool4() {
  static cpu::ThreadPool p(4);
  return p;
}

Status run(const std::string &kind, std::vector<Tensor> inputs, Tensor &out,
           cpu::ThreadPool &pool, std::vector<plan::Attr> attrs = {}) {
  std::vector<Tensor> results;
  Status s = test::runStep(kind, std::move(inputs), results, std::move(attrs),
                           1, pool);
  out = results.empty() ? Tensor() : results[0];
  return s;
}

Tensor random(ElemType type, Shape shape, std::mt19937 &rng) {
  Tensor t = Tensor::allocate(type, std::move(shape));
  std::uniform_real_distribution<float> f(-2.0f, 2.0f);
  std::uniform_int_distribution<int> i(-5, 5);
  for (int64_t e = 0; e < t.numel(); ++e) {
    if (type == ElemType::F32)
      t.as<float>()[e] = f(rng);
    else if (type == ElemType::I64)
      t.as<int64_t>()[e] = i(rng);
    else
      t.as<int32_t>()[e] = i(rng);
  }
  return t;
}

bool sameBytes(const Tensor &a, const Tensor &b) {
  return a.type == b.type && a.shape == b.shape &&
         (a.bytes() == 0 || std::memcmp(a.data, b.data, a.bytes()) == 0);
}

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    st[d - 1] = st[d] * shape[d];
  return st;
}

/// Element e of a row-major tensor of `out` shape, as a multi-index.
std::vector<int64_t> unravel(int64_t e, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = e % shape[d];
    e /= shape[d];
  }
  return idx;
}

/// Offset in an operand of `shape` broadcast to the output index `idx`.
int64_t broadcastOffset(const std::vector<int64_t> &idx, const Shape &shape) {
  std::vector<int64_t> st = stridesOf(shape);
  int64_t off = 0;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t d = idx.size() - shape.size() + k;
    off += (shape[k] == 1 ? 0 : idx[d]) * st[k];
  }
  return off;
}

template <typename T> T refOp(const std::string &op, T a, T b) {
  if (op == "Add")
    return a + b;
  if (op == "Sub")
    return a - b;
  if (op == "Mul")
    return a * b;
  if (op == "Div") {
    if constexpr (std::is_integral<T>::value) {
      if (b == 0)
        return T(0);
      if (b == -1) // MIN / -1 wraps to MIN instead of trapping
        return a == std::numeric_limits<T>::min() ? a : T(-a);
      return a / b;
    } else {
      return a / b;
    }
  }
  if constexpr (std::is_same<T, float>::value) {
    if (b == 2.0f)
      return a * a;
    if (b == 3.0f)
      return a * a * a;
    return std::pow(a, b);
  } else {
    // Saturating, as the kernel defines it for any exponent in a plan.
    double r = std::pow(double(a), double(b));
    if (!(r > double(std::numeric_limits<T>::min())))
      return std::numeric_limits<T>::min();
    if (r >= double(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return T(r);
  }
}

template <typename T>
Tensor refBinary(const std::string &op, const Tensor &a, const Tensor &b,
                 const Shape &outShape) {
  Tensor out = Tensor::allocate(a.type, outShape);
  for (int64_t e = 0; e < out.numel(); ++e) {
    std::vector<int64_t> idx = unravel(e, outShape);
    out.as<T>()[e] = refOp<T>(op, a.as<T>()[broadcastOffset(idx, a.shape)],
                              b.as<T>()[broadcastOffset(idx, b.shape)]);
  }
  return out;
}

Tensor refBinaryAny(const std::string &op, const Tensor &a, const Tensor &b,
                    const Shape &outShape) {
  if (a.type == ElemType::F32)
    return refBinary<float>(op, a, b, outShape);
  if (a.type == ElemType::I64)
    return refBinary<int64_t>(op, a, b, outShape);
  return refBinary<int32_t>(op, a, b, outShape);
}

void checkBinary(const Shape &sa, const Shape &sb, std::mt19937 &rng) {
  size_t r = std::max(sa.size(), sb.size());
  Shape outShape(r);
  for (size_t k = 0; k < r; ++k) {
    int64_t da = k < sa.size() ? sa[sa.size() - 1 - k] : 1;
    int64_t db = k < sb.size() ? sb[sb.size() - 1 - k] : 1;
    outShape[r - 1 - k] = da == 1 ? db : da;
  }
  for (ElemType type : {ElemType::F32, ElemType::I64, ElemType::I32}) {
    Tensor a = random(type, sa, rng), b = random(type, sb, rng);
    for (const char *op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
      Tensor got1, got4;
      std::string kind = op;
      std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
      std::vector<plan::Attr> attrs = {{"kind", kind}};
      ASSERT_TRUE(run("binary", {a, b}, got1, pool1(), attrs));
      ASSERT_TRUE(run("binary", {a, b}, got4, pool4(), attrs));
      Tensor want = refBinaryAny(op, a, b, outShape);
      EXPECT_TRUE(sameBytes(got1, want))
          << op << " " << shapeString(sa) << " " << shapeString(sb) << " "
          << plan::elemTypeName(type);
      EXPECT_TRUE(sameBytes(got1, got4)) << op << " threads";
    }
  }
}

TEST(DataPath, BinaryOpsMatchTheReferenceOnEveryBroadcastForm) {
  std::mt19937 rng(7);
  // Same shape (flat), odd sizes, big enough to split over threads.
  checkBinary({512, 768}, {512, 768}, rng);
  checkBinary({17}, {17}, rng);
  checkBinary({3, 1000003 / 3}, {3, 1000003 / 3}, rng);
  // Scalar either side, rank 0 and [1].
  checkBinary({5, 33}, {}, rng);
  checkBinary({1}, {7, 3, 19}, rng);
  checkBinary({}, {}, rng);
  // Row and column broadcasts, both directions, and outer products.
  checkBinary({300, 77}, {77}, rng);
  checkBinary({300, 1}, {300, 77}, rng);
  checkBinary({40000, 1}, {1, 3}, rng);
  checkBinary({2, 1, 5, 1, 3}, {4, 1, 6, 3}, rng);
  // Empty tensors.
  checkBinary({0, 5}, {5}, rng);
  checkBinary({3, 0}, {1}, rng);
  // Random ranks 1..5 with random broadcast dims.
  std::uniform_int_distribution<int> rank(1, 5), dim(1, 9), coin(0, 2);
  for (int trial = 0; trial < 60; ++trial) {
    Shape full(size_t(rank(rng)));
    for (int64_t &d : full)
      d = dim(rng);
    Shape a = full, b = full;
    for (size_t d = 0; d < full.size(); ++d) {
      int c = coin(rng);
      if (c == 1)
        a[d] = 1;
      else if (c == 2)
        b[d] = 1;
    }
    b.erase(b.begin(), b.begin() + std::uniform_int_distribution<int>(
                                       0, int(b.size()))(rng));
    checkBinary(a, b, rng);
  }
}

TEST(DataPath, UnaryOpsSplitOverThreadsBitForBit) {
  std::mt19937 rng(8);
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(100003)}) {
    Tensor x = random(ElemType::F32, {n}, rng);
    for (const char *op : {"tanh", "erf", "exp", "neg", "sigmoid", "relu",
                           "abs", "sqrt", "reciprocal"}) {
      Tensor got1, got4;
      std::vector<plan::Attr> attrs = {{"kind", std::string(op)}};
      ASSERT_TRUE(run("unary", {x}, got1, pool1(), attrs));
      ASSERT_TRUE(run("unary", {x}, got4, pool4(), attrs));
      EXPECT_TRUE(sameBytes(got1, got4)) << op;
      if (n > 0 && std::string(op) == "tanh") {
        EXPECT_EQ(got1.as<float>()[n - 1], std::tanh(x.as<float>()[n - 1]));
      }
    }
  }
}

Tensor refTranspose(const Tensor &x, const std::vector<int64_t> &perm) {
  Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    shape[i] = x.shape[size_t(perm[i])];
  Tensor out = Tensor::allocate(x.type, shape);
  std::vector<int64_t> st = stridesOf(x.shape);
  size_t es = plan::elemTypeSize(x.type);
  for (int64_t e = 0; e < out.numel(); ++e) {
    std::vector<int64_t> idx = unravel(e, shape);
    int64_t off = 0;
    for (size_t i = 0; i < perm.size(); ++i)
      off += idx[i] * st[size_t(perm[i])];
    std::memcpy(static_cast<char *>(out.data) + size_t(e) * es,
                static_cast<const char *>(x.data) + size_t(off) * es, es);
  }
  return out;
}

void checkTranspose(const Shape &shape, const std::vector<int64_t> &perm,
                    ElemType type, std::mt19937 &rng) {
  Tensor x = random(type, shape, rng);
  std::vector<plan::Attr> attrs = {{"permutation", perm}};
  Tensor got1, got4;
  ASSERT_TRUE(run("transpose", {x}, got1, pool1(), attrs));
  ASSERT_TRUE(run("transpose", {x}, got4, pool4(), attrs));
  Tensor want = refTranspose(x, perm);
  std::string what = shapeString(shape) + " perm " + shapeString(perm);
  EXPECT_TRUE(sameBytes(got1, want)) << what;
  EXPECT_TRUE(sameBytes(got1, got4)) << what;
}

TEST(DataPath, TransposeMatchesTheReferenceForEveryPermutation) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> dim(1, 6);
  for (int r = 1; r <= 5; ++r) {
    std::vector<int64_t> perm(static_cast<size_t>(r));
    std::iota(perm.begin(), perm.end(), 0);
    int count = 0;
    do {
      // Rank 5 has 120 permutations; every third keeps the test quick.
      if (r == 5 && count++ % 3 != 0)
        continue;
      Shape shape(static_cast<size_t>(r));
      for (int64_t &d : shape)
        d = dim(rng);
      for (ElemType type : {ElemType::F32, ElemType::I64})
        checkTranspose(shape, perm, type, rng);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // The attention forms: [B, S, H, D] <-> [B, H, S, D], prefill and decode,
  // big enough to split over threads; D odd too.
  checkTranspose({1, 512, 12, 64}, {0, 2, 1, 3}, ElemType::F32, rng);
  checkTranspose({2, 12, 37, 65}, {0, 2, 1, 3}, ElemType::F32, rng);
  checkTranspose({1, 1, 12, 64}, {0, 2, 1, 3}, ElemType::F32, rng);
  // The inner dim moving, big.
  checkTranspose({300, 517}, {1, 0}, ElemType::F32, rng);
  checkTranspose({3, 1, 200, 1, 130}, {4, 1, 2, 3, 0}, ElemType::I32, rng);
  // Empty tensors.
  checkTranspose({0, 3, 4}, {2, 0, 1}, ElemType::F32, rng);
}

TEST(DataPath, TransposeThatKeepsTheOrderIsAView) {
  std::mt19937 rng(10);
  // Decode's [1, 1, H, D] -> [1, H, 1, D] moves only size-1 dims.
  Tensor x = random(ElemType::F32, {1, 1, 12, 64}, rng), got;
  ASSERT_TRUE(run("transpose", {x}, got, pool1(),
                  {{"permutation", std::vector<int64_t>{0, 2, 1, 3}}}));
  EXPECT_EQ(got.shape, (Shape{1, 12, 1, 64}));
  EXPECT_EQ(got.data, x.data);
  // A real permutation copies.
  Tensor y = random(ElemType::F32, {1, 2, 12, 64}, rng);
  ASSERT_TRUE(run("transpose", {y}, got, pool1(),
                  {{"permutation", std::vector<int64_t>{0, 2, 1, 3}}}));
  EXPECT_NE(got.data, y.data);
}

TEST(DataPath, SliceMatchesTheReferenceOnEveryAxis) {
  std::mt19937 rng(11);
  Tensor x = random(ElemType::F32, {4, 5, 33}, rng);
  struct Case {
    int64_t axis, start, size;
  };
  const Case cases[] = {
      {2, 1, 31}, // inner contiguous runs
      {2, 0, 33}, // all of it
      {1, 2, 3},  // middle rows
      {0, 3, 1},  // outer, one
      {2, 32, 1}, // last element of each row
      {0, 2, 0},  // empty
  };
  for (const Case &c : cases) {
    Tensor got1, got4;
    std::vector<plan::Attr> attrs = {
        {"axis", c.axis}, {"start", c.start}, {"size", c.size}};
    ASSERT_TRUE(run("slice", {x}, got1, pool1(), attrs));
    ASSERT_TRUE(run("slice", {x}, got4, pool4(), attrs));
    EXPECT_TRUE(sameBytes(got1, got4));
    Shape want = x.shape;
    want[size_t(c.axis)] = c.size;
    ASSERT_EQ(got1.shape, want);
    std::vector<int64_t> st = stridesOf(x.shape);
    for (int64_t e = 0; e < got1.numel(); ++e) {
      std::vector<int64_t> idx = unravel(e, got1.shape);
      idx[size_t(c.axis)] += c.start;
      int64_t off = 0;
      for (size_t d = 0; d < 3; ++d)
        off += idx[d] * st[d];
      ASSERT_EQ(got1.as<float>()[e], x.as<float>()[off]) << e;
    }
  }
  Tensor got;
  Status s =
      run("slice", {x}, got, pool1(),
          {{"axis", int64_t(1)}, {"start", int64_t(3)}, {"size", int64_t(3)}});
  EXPECT_EQ(s.message(),
            "slice: range [3, +3) of axis 1 is outside [4, 5, 33]");
}

TEST(DataPath, SliceOfOneOuterRowIsAView) {
  std::mt19937 rng(12);
  // Decode's stacked q/k/v output [1, 1, 48]: each member is a view.
  Tensor x = random(ElemType::F32, {1, 1, 48}, rng), got;
  ASSERT_TRUE(run(
      "slice", {x}, got, pool1(),
      {{"axis", int64_t(2)}, {"start", int64_t(32)}, {"size", int64_t(16)}}));
  EXPECT_EQ(got.shape, (Shape{1, 1, 16}));
  EXPECT_EQ(got.as<float>(), x.as<float>() + 32);
  // Two tokens: the columns are copied out into dense rows.
  Tensor y = random(ElemType::F32, {1, 2, 48}, rng);
  ASSERT_TRUE(run(
      "slice", {y}, got, pool1(),
      {{"axis", int64_t(2)}, {"start", int64_t(32)}, {"size", int64_t(16)}}));
  EXPECT_NE(got.data, y.data);
  EXPECT_EQ(got.as<float>()[16], y.as<float>()[48 + 32]);
}

TEST(DataPath, RecycledStorageIsReusedAndZeroedByAllocate) {
  releaseCachedTensorMemory();
  void *first;
  {
    Tensor t = Tensor::empty(ElemType::F32, {512, 768});
    first = t.data;
    std::fill(t.as<float>(), t.as<float>() + t.numel(), 1.0f);
  }
  EXPECT_GE(cachedTensorBytes(), size_t(512 * 768 * 4));
  // A slightly smaller request of the same class gets the same block back,
  // and allocate() still zero-fills it.
  Tensor u = Tensor::allocate(ElemType::F32, {511, 768});
  EXPECT_EQ(u.data, first);
  EXPECT_EQ(cachedTensorBytes(), size_t(0));
  for (int64_t i = 0; i < u.numel(); ++i)
    ASSERT_EQ(u.as<float>()[i], 0.0f);
  releaseCachedTensorMemory();
}

TEST(DataPath, FullTensorCacheDropsTheSizeUsedLongestAgo) {
  releaseCachedTensorMemory();
  // Room for two blocks of 1 MiB: a size nobody asks for any more must give
  // way to the one in use, instead of freezing the cache.
  setTensorCacheLimit(size_t(2) << 20);
  const Shape mib = {256, 1024}; // 1 MiB of f32
  const Shape half = {128, 1024};
  {
    Tensor a = Tensor::empty(ElemType::F32, mib);
    Tensor b = Tensor::empty(ElemType::F32, mib);
  }
  EXPECT_EQ(cachedTensorBytes(), size_t(2) << 20);
  void *kept;
  {
    Tensor c = Tensor::empty(ElemType::F32, half); // a new size, in use now
    kept = c.data;
  }
  // Freeing c had to drop one old 1 MiB block to fit its 512 KiB.
  EXPECT_EQ(cachedTensorBytes(), (size_t(1) << 20) + (size_t(512) << 10));
  Tensor d = Tensor::empty(ElemType::F32, half);
  EXPECT_EQ(d.data, kept);
  // A block larger than the whole cap is never kept, nor evicts anything.
  size_t before = cachedTensorBytes();
  { Tensor big = Tensor::empty(ElemType::F32, {1024, 1024}); }
  EXPECT_EQ(cachedTensorBytes(), before);
  setTensorCacheLimit(size_t(1) << 30);
  releaseCachedTensorMemory();
}

} // namespace
