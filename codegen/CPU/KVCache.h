//===- KVCache.h - Paged KV cache layout and kv_write -----------*- C++ -*-===//
//
// One layer's cache is two data pools, K and V, each
//   [numBlocks * blockSize slots][numKvHeads][headRowBytes()]   dense,
// so a token's slot (block * blockSize + offset) holds all its kv heads
// contiguously and a block is one contiguous run of blockSize tokens: a
// block copy (prefix cache, swap) is one memcpy per pool, and kv_write of a
// token is one contiguous store per pool.
//
// Quantized caches keep this addressing (KVQuant.h defines the row
// formats): fp8 rows are one byte per element with a static scale per kv
// head (kScale / vScale, given by the caller); int8 / int4 rows are one
// byte / half a byte per element and their f16 {scale, min} pairs live in
// two params pools, K and V, indexed by the same slot:
//   [numBlocks * blockSize slots][numKvHeads][headDim / group][2] uint16,
// so a block copy is one memcpy per data pool and one per params pool.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_KVCACHE_H
#define FOLIO_CODEGEN_CPU_KVCACHE_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/Status.h"
#include "codegen/CPU/ThreadPool.h"

#include <cstdint>

namespace folio::cpu {

/// A view of one layer's paged cache (it owns nothing).
struct KVCacheView {
  /// Data pools: [numBlocks * blockSize slots][numKvHeads][headRowBytes()].
  void *k = nullptr, *v = nullptr;
  /// int8 / int4 only: per slot, per kv head, per group, {uint16 f16
  /// scale, uint16 f16 min}.
  void *kParams = nullptr, *vParams = nullptr;
  /// fp8 only: static per-kv-head scales [numKvHeads], > 0 and finite.
  const float *kScale = nullptr, *vScale = nullptr;
  int64_t numBlocks = 0;
  int64_t blockSize = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  DType dtype = DType::F32;
  /// int8 / int4: elements per (scale, min) group along headDim; divides
  /// headDim (int8 usually uses headDim: one pair per token-head). 0 for
  /// the other types.
  int64_t group = 0;

  /// Elements in one slot (all kv heads of one token).
  int64_t slotElements() const { return numKvHeads * headDim; }
  /// Bytes of one kv head's row in a data pool (int4: headDim / 2).
  size_t headRowBytes() const { return size_t(headDim) * dtypeBits(dtype) / 8; }
  /// Bytes of one slot in a data pool.
  size_t slotBytes() const { return size_t(numKvHeads) * headRowBytes(); }
  /// Bytes of one slot in a params pool; 0 when the type has none.
  size_t paramSlotBytes() const {
    return hasGroupParams(dtype) && group > 0
               ? size_t(numKvHeads * (headDim / group)) * 4
               : 0;
  }
  /// Bytes of one data pool (K or V).
  size_t poolBytes() const {
    return size_t(numBlocks * blockSize) * slotBytes();
  }
  /// Bytes of one params pool (K or V); 0 when the type has none.
  size_t paramPoolBytes() const {
    return size_t(numBlocks * blockSize) * paramSlotBytes();
  }
};

/// Bytes K and V of one token take in every pool (data + params), for
/// sizing the block pool.
size_t kvBytesPerToken(DType dtype, int64_t numKvHeads, int64_t headDim,
                       int64_t group);

/// Checks the view's dimensions, pointers and the dtype's requirements
/// (fp8: both static scales present, positive and finite; int8 / int4: a
/// group dividing headDim, even for int4, and both params pools; other
/// types: no group, params or scales).
Status validateKVCache(const KVCacheView &cache);

/// Stores this step's K and V rows into the cache: token t's rows go to slot
/// slotMapping[t]; slot -1 skips the token (padding). k and v are
/// [numTokens, numKvHeads, headDim] with row strides kStride / vStride in
/// elements (>= numKvHeads*headDim), so they can be slices of a fused QKV
/// projection output. Values are stored as quantizeKvRow (KVQuant.h) stores
/// them: rounded to nearest even, fp8 scaled by the head's static scale,
/// int8 / int4 with fresh params per (token, head, group).
/// Two tokens with the same slot is an error, as is a slot out of range.
Status kvWrite(const KVCacheView &cache, const float *k, int64_t kStride,
               const float *v, int64_t vStride, const int64_t *slotMapping,
               int64_t numTokens, ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_KVCACHE_H
