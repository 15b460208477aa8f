//===- KVCache.h - Paged KV cache layout and kv_write -----------*- C++ -*-===//
//
// One layer's cache is two pools, K and V, each
//   [numBlocks, blockSize, numKvHeads, headDim]   row-major, dense,
// so a token's slot (block * blockSize + offset) holds all its kv heads
// contiguously and a block is one contiguous run of blockSize tokens: a
// block copy (prefix cache, swap) is one memcpy per pool, and kv_write of a
// token is one contiguous store per pool.
//
// Quantized caches (int8, fp8, int4, KIVI) extend this in a later issue
// without changing the addressing: the element type narrows and scales live
// in a separate pool indexed by the same slot (per token-head) or by
// (block, head) / head, as the `scale` of !folio.kv_cache says.
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
  void *k = nullptr;
  void *v = nullptr;
  int64_t numBlocks = 0;
  int64_t blockSize = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  DType dtype = DType::F32;

  /// Elements in one slot (all kv heads of one token).
  int64_t slotElements() const { return numKvHeads * headDim; }
  /// Bytes of one pool (K or V).
  size_t poolBytes() const {
    return size_t(numBlocks * blockSize * slotElements()) * dtypeSize(dtype);
  }
};

/// Checks the view's dimensions and pointers.
Status validateKVCache(const KVCacheView &cache);

/// Stores this step's K and V rows into the cache: token t's rows go to slot
/// slotMapping[t]; slot -1 skips the token (padding). k and v are
/// [numTokens, numKvHeads, headDim] with row strides kStride / vStride in
/// elements (>= numKvHeads*headDim), so they can be slices of a fused QKV
/// projection output. Values are rounded to the cache dtype (nearest even).
/// Two tokens with the same slot is an error, as is a slot out of range.
Status kvWrite(const KVCacheView &cache, const float *k, int64_t kStride,
               const float *v, int64_t vStride, const int64_t *slotMapping,
               int64_t numTokens, ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_KVCACHE_H
