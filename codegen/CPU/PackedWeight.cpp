//===- PackedWeight.cpp - Weight preparation at load ----------------------===//

#include "codegen/CPU/Convert.h"
#include "codegen/CPU/PackedWeightImpl.h"
#include "codegen/CPU/Validate.h"

#include <cstdint>
#include <cstring>
#include <mutex>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace folio::cpu {

namespace detail {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;
/// Weights are packed one after another at load, so most land in a few
/// chunks; a weight larger than this gets a chunk of its own.
constexpr size_t kChunkBytes = size_t(64) << 20;

size_t roundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

/// One mapping of 2 MiB-aligned memory the kernel is asked to back with
/// transparent huge pages (this machine's THP mode is `madvise`). Decode
/// streams every weight once per token; with 4 KiB pages a 0.4-6 MB weight
/// costs a TLB walk per page, and with huge pages the model's GEMVs ran
/// ~5 % closer to the read loop (docs/cpu-kernels.md). Untouched memory of a
/// chunk costs nothing: the pages are only backed when written.
struct Chunk {
  char *base = nullptr;
  size_t size = 0, used = 0;
  bool mapped = false;
  explicit Chunk(size_t bytes) : size(bytes) {
#ifdef __linux__
    // Over-map by a huge page and trim, to align the start.
    size_t span = bytes + kHugePage;
    void *p = mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      char *raw = static_cast<char *>(p);
      char *aligned = reinterpret_cast<char *>(
          roundUp(reinterpret_cast<uintptr_t>(raw), kHugePage));
      if (aligned != raw)
        munmap(raw, size_t(aligned - raw));
      size_t tail = size_t(raw + span - (aligned + bytes));
      if (tail)
        munmap(aligned + bytes, tail);
      base = aligned;
      mapped = true;
#ifdef MADV_HUGEPAGE
      madvise(base, bytes, MADV_HUGEPAGE);
#endif
      return;
    }
#endif
    base = static_cast<char *>(std::aligned_alloc(kHugePage, bytes));
  }
  ~Chunk() {
#ifdef __linux__
    if (mapped) {
      munmap(base, size);
      return;
    }
#endif
    std::free(base);
  }
  Chunk(const Chunk &) = delete;
  Chunk &operator=(const Chunk &) = delete;
};

} // namespace

std::shared_ptr<void> allocateWeightMemory(size_t bytes) {
  static std::mutex mu;
  // Weak: once every weight of the current chunk is gone, so is the chunk.
  static std::weak_ptr<Chunk> current;
  size_t need = roundUp(bytes > 0 ? bytes : 1, 4096);
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<Chunk> chunk = current.lock();
  if (!chunk || chunk->size - chunk->used < need) {
    size_t size = need > kChunkBytes ? roundUp(need, kHugePage) : kChunkBytes;
    auto fresh = std::make_shared<Chunk>(size);
    if (!fresh->base)
      return nullptr;
    // A weight too big for a shared chunk keeps it to itself and leaves
    // the current chunk in place for the next ones.
    if (size > kChunkBytes) {
      fresh->used = need;
      return std::shared_ptr<void>(fresh, fresh->base);
    }
    chunk = fresh;
    current = chunk;
  }
  char *p = chunk->base + chunk->used;
  chunk->used += need;
  // Aliasing constructor: the slice shares the chunk's lifetime.
  return std::shared_ptr<void>(chunk, p);
}

} // namespace detail

using namespace detail;

PackedWeight::PackedWeight() = default;
PackedWeight::~PackedWeight() = default;
PackedWeight::PackedWeight(PackedWeight &&) noexcept = default;
PackedWeight &PackedWeight::operator=(PackedWeight &&) noexcept = default;

int64_t PackedWeight::outFeatures() const { return impl ? impl->n : 0; }
int64_t PackedWeight::inFeatures() const { return impl ? impl->k : 0; }
DType PackedWeight::storage() const {
  return impl ? impl->storage : DType::F32;
}
const void *PackedWeight::data() const { return impl ? impl->w : nullptr; }
const float *PackedWeight::bias() const {
  return impl && impl->hasBias ? impl->bias.data() : nullptr;
}
const WeightView &PackedWeight::view() const {
  static const WeightView none;
  return impl ? impl->view : none;
}
size_t PackedWeight::weightBytes() const {
  return impl ? weightViewBytes(impl->view) : 0;
}

#ifdef FOLIO_ENABLE_DNNL
const DnnlMatmul *PackedWeight::Impl::matmul() const {
  if (dnnlLazy)
    std::call_once(dnnlOnce, [this] {
      std::string why;
      dnnl = DnnlMatmul::create(
          w, storage, n, k, hasBias ? bias.data() : nullptr, gatedHalves, why);
    });
  return dnnl.get();
}
#endif

bool PackedWeight::usesDnnl() const {
#ifdef FOLIO_ENABLE_DNNL
  return impl && impl->matmul();
#else
  return false;
#endif
}

Status PackedWeight::pack(const void *data, DType srcType, int64_t n, int64_t k,
                          const float *bias, DType storage, PackedWeight &out,
                          bool borrow, bool gatedHalves) {
  const char *kernel = "PackedWeight";
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "out features", n));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "in features", k));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "weight data", data, n * k));
  bool quantized =
      storage == DType::I8 || storage == DType::FP8E4M3 || storage == DType::I4;
  if (!isPlainFloat(srcType) || (!isPlainFloat(storage) && !quantized))
    return Status::error(
        std::string("PackedWeight: weights are f32, bf16 or f16 and are "
                    "stored f32, bf16, int8, fp8_e4m3 or int4, not ") +
        dtypeName(isPlainFloat(srcType) ? storage : srcType));
  if (quantized) {
    std::vector<float> rows(size_t(n * k));
    for (int64_t r = 0; r < n; ++r)
      loadRow(static_cast<const char *>(data) +
                  size_t(r * k) * dtypeSize(srcType),
              srcType, rows.data() + r * k, k);
    auto packing = std::make_shared<WeightPacking>();
    FOLIO_RETURN_IF_ERROR(packWeightRows(rows.data(), n, k, storage, *packing));
    FOLIO_RETURN_IF_ERROR(fromView(packing->view(), bias, out, gatedHalves));
    out.impl->packing = std::move(packing);
    return Status::success();
  }
  if (storage == DType::F16)
    return Status::error("PackedWeight: f16 storage is not supported (oneDNN "
                         "2.6 has no f16 matmul); pack f16 weights as bf16");
  auto impl = std::make_unique<Impl>();
  impl->n = n;
  impl->k = k;
  impl->storage = storage;
  size_t count = size_t(n * k);
  if (borrow && srcType == storage) {
    impl->w = data;
  } else {
    size_t bytes = count * dtypeSize(storage);
    impl->owned = allocateWeightMemory(bytes);
    void *p = impl->owned.get();
    if (!p)
      return Status::error("PackedWeight: out of memory");
    impl->w = p;
    if (srcType == storage) {
      std::memcpy(p, data, bytes);
    } else {
      // Through f32 in row-sized pieces: exact for widening, one rounding
      // (nearest even) for narrowing.
      std::vector<float> row(static_cast<size_t>(k));
      for (int64_t r = 0; r < n; ++r) {
        const char *src = static_cast<const char *>(data) +
                          size_t(r * k) * dtypeSize(srcType);
        loadRow(src, srcType, row.data(), k);
        storeRow(row.data(),
                 static_cast<char *>(p) + size_t(r * k) * dtypeSize(storage),
                 storage, k);
      }
    }
  }
  impl->view.storage = storage;
  impl->view.n = n;
  impl->view.k = k;
  impl->view.data = impl->w;
  finish(*impl, bias, gatedHalves, /*lazy=*/false);
  out.impl = std::move(impl);
  return Status::success();
}

void PackedWeight::finish(Impl &impl, const float *bias, bool gatedHalves,
                          bool lazy) {
  if (bias) {
    impl.bias.assign(bias, bias + impl.n);
    impl.hasBias = true;
  }
#ifndef FOLIO_ENABLE_DNNL
  (void)gatedHalves;
  (void)lazy;
#endif
#ifdef FOLIO_ENABLE_DNNL
  // int8, fp8, int4 and f16 weights stay with the register-converting
  // kernels at every M (GemvInt8Avx512.cpp): oneDNN 2.6's int8 matmul
  // wants int8 activations, and it has no f16, fp8 or int4 matmul.
  if (impl.storage == DType::I8 || impl.storage == DType::F16 ||
      impl.storage == DType::FP8E4M3 || impl.storage == DType::I4)
    return;
  impl.gatedHalves = gatedHalves;
  impl.dnnlLazy = lazy;
  if (lazy)
    return;
  std::string why;
  impl.dnnl = DnnlMatmul::create(impl.w, impl.storage, impl.n, impl.k,
                                 impl.hasBias ? impl.bias.data() : nullptr,
                                 gatedHalves, why);
  // No primitive (an exotic CPU): the GEMV kernel takes every M.
#endif
}

Status PackedWeight::fromView(const WeightView &view, const float *bias,
                              PackedWeight &out, bool gatedHalves) {
  FOLIO_RETURN_IF_ERROR(checkWeightView(view));
  auto impl = std::make_unique<Impl>();
  impl->n = view.n;
  impl->k = view.k;
  impl->storage = view.storage;
  impl->w = view.data;
  impl->view = view;
  finish(*impl, bias, gatedHalves, /*lazy=*/true);
  out.impl = std::move(impl);
  return Status::success();
}

} // namespace folio::cpu
