//===- KVRowLoad.h - Cache rows to f32 and back, per ISA --------*- C++ -*-===//
//
// Internal. The attention tiles widen every K/V row they read into an f32
// scratch through loadKvRow (or loadKvRowAvx512 in AVX-512-only code), and
// kvWrite stores rows through storeKvRow: all bit-identical to the scalar
// definitions in KVQuant.h, so a cache written on one machine reads the
// same on another and every tile sees the same values.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_KVROWLOAD_H
#define FOLIO_CODEGEN_CPU_KVROWLOAD_H

#include "codegen/CPU/DType.h"

#include <cstdint>

namespace folio::cpu::detail {

/// How one kv head's rows of one pool (K or V) are stored.
struct KvRowFormat {
  DType dtype = DType::F32;
  int64_t headDim = 0;
  int64_t group = 0;  ///< int8 / int4
  float scale = 1.0f; ///< fp8: the head's static scale
  /// int2 keys: params are the block's per-channel pairs [headDim][2]
  /// (kiviDequantizeKey) instead of per-group ones.
  bool kiviKey = false;
};

// int2 rows: a row whose params pointer is null is a resident row, headDim
// f32 values copied as they are; otherwise int2 codes with the params
// kiviKey says.

/// out[0, headDim) = the row at `data` (with its params, int8 / int4) as
/// f32, exactly as dequantizeKvRow gives it. Picks the ISA.
void loadKvRow(const KvRowFormat &f, const void *data, const uint16_t *params,
               float *out);
void loadKvRowAvx512(const KvRowFormat &f, const void *data,
                     const uint16_t *params, float *out);

/// The same for n rows: row j (data rows[j], params params[j]; params may
/// be null for types without) to out + j * headDim. One call per chunk of
/// keys, so the dispatch is not paid per row.
void loadKvRows(const KvRowFormat &f, const char *const *rows,
                const uint16_t *const *params, int64_t n, float *out);
void loadKvRowsAvx512(const KvRowFormat &f, const char *const *rows,
                      const uint16_t *const *params, int64_t n, float *out);

/// loadKvRows for int8, int4, fp8, bf16 and f16 rows with AVX2 + FMA +
/// F16C; returns false (and loads nothing) for the other types (f32, int2).
bool loadKvRowsAvx2(const KvRowFormat &f, const char *const *rows,
                    const uint16_t *const *params, int64_t n, float *out);

/// Stores row x[0, headDim) as quantizeKvRow does. Picks the ISA.
void storeKvRow(const KvRowFormat &f, const float *x, void *data,
                uint16_t *params);
void storeKvRowAvx512(const KvRowFormat &f, const float *x, void *data,
                      uint16_t *params);
/// storeKvRow for int8 and int4 rows with AVX2 + FMA + F16C; returns false
/// (and stores nothing) for the other types.
bool storeKvRowAvx2(const KvRowFormat &f, const float *x, void *data,
                    uint16_t *params);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_KVROWLOAD_H
