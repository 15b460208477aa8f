//===- Convert.cpp - Row conversions, portable path and dispatch ----------===//

#include "codegen/CPU/Convert.h"
#include "codegen/CPU/CPUFeatures.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace folio::cpu::detail {

void rowTypeMisuse(const char *fn, const char *takes, DType t) {
  std::fprintf(stderr,
               "folio: %s takes %s only, got %s (quantized rows need their "
               "params or scale: loadKvRow(s) and storeKvRow, KVRowLoad.h)\n",
               fn, takes, dtypeName(t));
  std::abort();
}

void storeRow(const float *src, void *dst, DType t, int64_t n) {
  if (!isPlainFloat(t))
    rowTypeMisuse("storeRow", "f32, bf16 and f16", t);
  if (t == DType::F32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  if (activeIsa() == Isa::Avx512)
    return storeRowAvx512(src, dst, t, n);
  if (activeIsa() == Isa::Avx2)
    return storeRowAvx2(src, dst, t, n);
  uint16_t *d = static_cast<uint16_t *>(dst);
  if (t == DType::BF16)
    for (int64_t i = 0; i < n; ++i)
      d[i] = floatToBf16(src[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      d[i] = floatToF16(src[i]);
}

void loadRow(const void *src, DType t, float *dst, int64_t n) {
  if (!isPlainFloat(t))
    rowTypeMisuse("loadRow", "f32, bf16 and f16", t);
  if (t == DType::F32) {
    std::memcpy(dst, src, size_t(n) * 4);
    return;
  }
  if (activeIsa() == Isa::Avx512)
    return loadRowAvx512(src, t, dst, n);
  if (activeIsa() == Isa::Avx2)
    return loadRowAvx2(src, t, dst, n);
  const uint16_t *s = static_cast<const uint16_t *>(src);
  if (t == DType::BF16)
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToFloat(s[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      dst[i] = f16ToFloat(s[i]);
}

} // namespace folio::cpu::detail
