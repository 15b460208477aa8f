//===- Tensor.cpp - Run-time values of the CPU executor -------------------===//
//
// Result storage comes from a small recycling cache. The executor keeps
// every step's result until the end of a forward and allocates each one
// fresh, so without recycling every large result lands on newly mapped
// pages: the kernel faults and zeroes them one page at a time, which cost
// more than the work of the cheap steps themselves (a [512, 768] residual
// add spent most of its 0.5 ms faulting in its output). With the cache, the
// next forward reuses the blocks the previous one freed, already mapped and
// warm.
//
//===----------------------------------------------------------------------===//

#include "runtime/Executor/Tensor.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace folio::exec {

int64_t numelOf(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t Tensor::numel() const { return numelOf(shape); }

namespace {

/// Blocks below this go straight to malloc, whose own bins already reuse
/// them without page faults.
constexpr size_t kMinCachedBytes = size_t(64) << 10;

/// Rounds a large request up to one of four classes per power of two, so
/// that the varying sizes of decode and chunked prefill still find blocks
/// (at most 25% slack).
size_t sizeClass(size_t bytes) {
  size_t p = kMinCachedBytes;
  while (p * 2 <= bytes)
    p *= 2;
  size_t step = p / 4;
  return (bytes + step - 1) / step * step;
}

size_t defaultCacheLimit() {
  if (const char *env = std::getenv("FOLIO_TENSOR_CACHE_MB"))
    return size_t(std::strtoull(env, nullptr, 10)) << 20;
  return size_t(1) << 30;
}

/// Freed blocks by size class, for reuse. When a freed block would push the
/// total over the limit, the size classes used longest ago give up their
/// blocks first: a workload changes the sizes it needs (a long prefill, then
/// steady decode) and blocks of sizes nobody asks for any more must not hold
/// the space that the current ones need.
class BlockCache {
public:
  void *take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      SizeClass &c = free[bytes];
      c.lastUse = ++tick;
      if (!c.blocks.empty()) {
        void *p = c.blocks.back();
        c.blocks.pop_back();
        cachedBytes -= bytes;
        return p;
      }
    }
    return std::aligned_alloc(64, bytes);
  }

  void give(void *p, size_t bytes) {
    std::vector<void *> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex);
      SizeClass &mine = free[bytes];
      mine.lastUse = ++tick;
      // A block over the whole cap is never kept, so it evicts nothing.
      while (bytes <= limit && cachedBytes + bytes > limit) {
        SizeClass *victim = nullptr;
        size_t victimBytes = 0;
        for (auto &[b, c] : free)
          if (b != bytes && !c.blocks.empty() &&
              (!victim || c.lastUse < victim->lastUse)) {
            victim = &c;
            victimBytes = b;
          }
        if (!victim)
          break;
        dropped.push_back(victim->blocks.back());
        victim->blocks.pop_back();
        cachedBytes -= victimBytes;
      }
      if (cachedBytes + bytes <= limit) {
        mine.blocks.push_back(p);
        cachedBytes += bytes;
        p = nullptr;
      }
    }
    for (void *d : dropped)
      std::free(d);
    std::free(p);
  }

  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[bytes, c] : free)
      for (void *p : c.blocks)
        std::free(p);
    free.clear();
    cachedBytes = 0;
  }

  size_t cached() {
    std::lock_guard<std::mutex> lock(mutex);
    return cachedBytes;
  }

  void setLimit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    limit = bytes;
  }

private:
  struct SizeClass {
    std::vector<void *> blocks;
    uint64_t lastUse = 0;
  };
  std::mutex mutex;
  std::unordered_map<size_t, SizeClass> free;
  uint64_t tick = 0;
  size_t cachedBytes = 0;
  size_t limit = defaultCacheLimit();
};

BlockCache &blockCache() {
  // Leaked on purpose: tensors in static storage may outlive a static cache.
  static BlockCache *cache = new BlockCache;
  return *cache;
}

} // namespace

Tensor Tensor::empty(ElemType type, Shape shape) {
  Tensor t;
  t.type = type;
  t.shape = std::move(shape);
  // 64-byte alignment suits the AVX-512 kernels; never zero bytes so that
  // an empty tensor still has a valid pointer.
  size_t bytes = (t.bytes() + 63) / 64 * 64;
  if (bytes == 0)
    bytes = 64;
  void *mem;
  if (bytes >= kMinCachedBytes) {
    bytes = sizeClass(bytes);
    mem = blockCache().take(bytes);
    assert(mem && "out of memory");
    t.storage = std::shared_ptr<void>(
        mem, [bytes](void *p) { blockCache().give(p, bytes); });
  } else {
    mem = std::aligned_alloc(64, bytes);
    assert(mem && "out of memory");
    t.storage = std::shared_ptr<void>(mem, [](void *p) { std::free(p); });
  }
  t.data = mem;
  return t;
}

Tensor Tensor::allocate(ElemType type, Shape shape) {
  Tensor t = empty(type, std::move(shape));
  std::memset(t.data, 0, t.bytes());
  return t;
}

size_t cachedTensorBytes() { return blockCache().cached(); }
void releaseCachedTensorMemory() { blockCache().release(); }
void setTensorCacheLimit(size_t bytes) { blockCache().setLimit(bytes); }

Tensor Tensor::view(Shape newShape) const {
  assert(numelOf(newShape) == numel() && "a view keeps the element count");
  Tensor t = *this;
  t.shape = std::move(newShape);
  return t;
}

int64_t Tensor::intAt(int64_t i) const {
  return type == ElemType::I64 ? as<int64_t>()[i] : as<int32_t>()[i];
}

std::vector<int64_t> Tensor::ints() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    v[size_t(i)] = intAt(i);
  return v;
}

} // namespace folio::exec
