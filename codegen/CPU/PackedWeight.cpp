//===- PackedWeight.cpp - Weight preparation at load ----------------------===//

#include "codegen/CPU/Convert.h"
#include "codegen/CPU/PackedWeightImpl.h"
#include "codegen/CPU/Validate.h"

#include <cstring>

namespace folio::cpu {

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
size_t PackedWeight::weightBytes() const {
  return impl ? size_t(impl->n * impl->k) * dtypeSize(impl->storage) : 0;
}

bool PackedWeight::usesDnnl() const {
#ifdef FOLIO_ENABLE_DNNL
  return impl && impl->dnnl;
#else
  return false;
#endif
}

Status PackedWeight::pack(const void *data, DType srcType, int64_t n, int64_t k,
                          const float *bias, DType storage, PackedWeight &out,
                          bool borrow) {
  const char *kernel = "PackedWeight";
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "out features", n));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "in features", k));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "weight data", data, n * k));
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
    void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p)
      return Status::error("PackedWeight: out of memory");
    impl->owned.reset(p);
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
  if (bias) {
    impl->bias.assign(bias, bias + n);
    impl->hasBias = true;
  }
#ifdef FOLIO_ENABLE_DNNL
  std::string why;
  impl->dnnl = DnnlMatmul::create(
      impl->w, storage, n, k, impl->hasBias ? impl->bias.data() : nullptr, why);
  // No primitive (an exotic CPU): the GEMV kernel takes every M.
#endif
  out.impl = std::move(impl);
  return Status::success();
}

} // namespace folio::cpu
