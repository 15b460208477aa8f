//===- KVRowLoad.cpp - Cache rows, portable path and dispatch -------------===//

#include "codegen/CPU/KVRowLoad.h"
#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/Convert.h"
#include "codegen/CPU/KVQuant.h"

#include <cstring>

namespace folio::cpu::detail {

namespace {

void loadKiviRow(const KvRowFormat &f, const void *data, const uint16_t *params,
                 float *out) {
  if (!params)
    std::memcpy(out, data, size_t(f.headDim) * sizeof(float));
  else if (f.kiviKey)
    kiviDequantizeKey(static_cast<const uint8_t *>(data), params, f.headDim,
                      out);
  else
    dequantizeKvRow(data, params, f.headDim, f.dtype, f.group, 1.0f, out);
}

} // namespace

void loadKvRow(const KvRowFormat &f, const void *data, const uint16_t *params,
               float *out) {
  if (isPlainFloat(f.dtype))
    return loadRow(data, f.dtype, out, f.headDim);
  const Isa isa = activeIsa();
  if (isa == Isa::Avx512)
    return loadKvRowAvx512(f, data, params, out);
  const char *row = static_cast<const char *>(data);
  if (isa == Isa::Avx2 && loadKvRowsAvx2(f, &row, &params, 1, out))
    return;
  if (isKivi(f.dtype))
    return loadKiviRow(f, data, params, out);
  dequantizeKvRow(data, params, f.headDim, f.dtype, f.group, f.scale, out);
}

void loadKvRows(const KvRowFormat &f, const char *const *rows,
                const uint16_t *const *params, int64_t n, float *out) {
  const Isa isa = activeIsa();
  if (isa == Isa::Avx512)
    return loadKvRowsAvx512(f, rows, params, n, out);
  if (isa == Isa::Avx2 && loadKvRowsAvx2(f, rows, params, n, out))
    return;
  // f32 / bf16 / f16: a plain conversion per row (what dequantizeKvRow's
  // per-element loads give, without a type switch per element).
  if (isPlainFloat(f.dtype)) {
    for (int64_t j = 0; j < n; ++j)
      loadRow(rows[j], f.dtype, out + j * f.headDim, f.headDim);
    return;
  }
  if (isKivi(f.dtype)) {
    for (int64_t j = 0; j < n; ++j)
      loadKiviRow(f, rows[j], params[j], out + j * f.headDim);
    return;
  }
  for (int64_t j = 0; j < n; ++j)
    dequantizeKvRow(rows[j], params ? params[j] : nullptr, f.headDim, f.dtype,
                    f.group, f.scale, out + j * f.headDim);
}

void storeKvRow(const KvRowFormat &f, const float *x, void *data,
                uint16_t *params) {
  if (isPlainFloat(f.dtype))
    return storeRow(x, data, f.dtype, f.headDim);
  const Isa isa = activeIsa();
  if (isa == Isa::Avx512)
    return storeKvRowAvx512(f, x, data, params);
  if (isa == Isa::Avx2 && storeKvRowAvx2(f, x, data, params))
    return;
  quantizeKvRow(x, f.headDim, f.dtype, f.group, f.scale, data, params);
}

} // namespace folio::cpu::detail
