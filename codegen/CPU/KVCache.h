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
// int2 (KIVI) caches: data pools as above (headDim / 4 bytes per head
// row, four codes per byte). K params are per (block, kv head, channel),
// computed over the block's filled slots:
//   kParams [numBlocks][numKvHeads][headDim][2] uint16,
// V params per (slot, kv head, group) as for int4:
//   vParams [numBlocks * blockSize][numKvHeads][headDim / group][2].
// A block is either quantized (residentIndex[block] == -1) or resident:
// residentIndex[block] = e >= 0 and its K and V rows live in f32 in entry
// e of the residual pools kResidual / vResidual,
//   [residualEntries][blockSize][numKvHeads][headDim] f32.
// kvWrite writes f32 rows into resident entries only; kiviQuantizeBlock
// turns a resident block into codes (the caller then releases the entry),
// kiviDequantizeBlock the other way.
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
  /// int2 only: tokens of the residual window (informational; a multiple
  /// of blockSize).
  int64_t residual = 0;
  /// int2 only: [numBlocks]; -1: the block is quantized; e >= 0: its K and
  /// V rows are in f32 in entry e of the residual pools.
  const int32_t *residentIndex = nullptr;
  /// int2 only: residual pools, [residualEntries][blockSize][numKvHeads]
  /// [headDim] f32.
  float *kResidual = nullptr, *vResidual = nullptr;
  int64_t residualEntries = 0;

  /// Elements in one slot (all kv heads of one token).
  int64_t slotElements() const { return numKvHeads * headDim; }
  /// Bytes of one kv head's row in a data pool (int4: headDim / 2).
  size_t headRowBytes() const { return size_t(headDim) * dtypeBits(dtype) / 8; }
  /// Bytes of one slot in a data pool.
  size_t slotBytes() const { return size_t(numKvHeads) * headRowBytes(); }
  /// Bytes of one slot in a params pool; 0 when the type has none. int2:
  /// the V params pool's (K params are per block).
  size_t paramSlotBytes() const {
    return (hasGroupParams(dtype) || isKivi(dtype)) && group > 0
               ? size_t(numKvHeads * (headDim / group)) * 4
               : 0;
  }
  /// Bytes of one data pool (K or V).
  size_t poolBytes() const {
    return size_t(numBlocks * blockSize) * slotBytes();
  }
  /// Bytes of one params pool (K or V) of an int8 / int4 cache; 0 for the
  /// other types (int2: kParamPoolBytes / vParamPoolBytes).
  size_t paramPoolBytes() const {
    return hasGroupParams(dtype)
               ? size_t(numBlocks * blockSize) * paramSlotBytes()
               : 0;
  }
  /// Bytes of the K params pool: int2 per (block, head, channel), int8 /
  /// int4 paramPoolBytes(), 0 otherwise.
  size_t kParamPoolBytes() const {
    return isKivi(dtype) ? size_t(numBlocks * numKvHeads * headDim) * 4
                         : paramPoolBytes();
  }
  /// Bytes of the V params pool: per (slot, head, group) for int2, int8 and
  /// int4; 0 otherwise.
  size_t vParamPoolBytes() const {
    return size_t(numBlocks * blockSize) * paramSlotBytes();
  }
  /// int2: bytes of one residual pool (K or V).
  size_t residualPoolBytes() const {
    return size_t(residualEntries * blockSize) * size_t(slotElements()) * 4;
  }
};

/// Bytes K and V of one token take in every pool (data + params), for
/// sizing the block pool. int2 needs blockSize (> 0, else 0 is returned):
/// 2 * heads * headDim / 4 (data) + heads * headDim * 4 / blockSize (K
/// params per block, rounded up) + heads * (headDim / group) * 4 (V
/// params); the residual pools are not included. The other types ignore
/// blockSize.
size_t kvBytesPerToken(DType dtype, int64_t numKvHeads, int64_t headDim,
                       int64_t group, int64_t blockSize = 0);

/// Checks the view's dimensions, pointers and the dtype's requirements
/// (fp8: both static scales present, positive and finite; int8 / int4: a
/// group dividing headDim, even for int4, and both params pools; other
/// types: no group, params or scales; int2: headDim % 4 == 0, a group
/// dividing headDim, both params pools and residentIndex when numBlocks >
/// 0, residualEntries >= 0 with both residual pools when > 0, residual a
/// multiple of blockSize).
Status validateKVCache(const KVCacheView &cache);

/// int2: quantizes the first `filled` (1..blockSize) rows of block
/// `block`'s resident entry (residentIndex[block] >= 0) into the data pools
/// and params: K per channel over those rows, V per token and group. The
/// other slots of the block get code 0 (their V params are left as they
/// are); they are never read. residentIndex is not changed (the caller
/// releases the entry).
Status kiviQuantizeBlock(const KVCacheView &cache, int64_t block,
                         int64_t filled);

/// int2: the inverse, writing the first `filled` rows of quantized block
/// `block` in f32 into residual entry `entry` (rows past `filled` are left
/// as they are). Does not change residentIndex.
Status kiviDequantizeBlock(const KVCacheView &cache, int64_t block,
                           int64_t filled, int64_t entry);

/// Stores this step's K and V rows into the cache: token t's rows go to slot
/// slotMapping[t]; slot -1 skips the token (padding). k and v are
/// [numTokens, numKvHeads, headDim] with row strides kStride / vStride in
/// elements (>= numKvHeads*headDim), so they can be slices of a fused QKV
/// projection output. Values are stored as quantizeKvRow (KVQuant.h) stores
/// them: rounded to nearest even, fp8 scaled by the head's static scale,
/// int8 / int4 with fresh params per (token, head, group). int2: the rows
/// are stored in f32 into the residual entry of the slot's block (entry
/// residentIndex[slot / blockSize], row slot % blockSize); a slot whose
/// block is not resident (or whose entry is >= residualEntries) is an error.
/// Two tokens with the same slot is an error, as is a slot out of range.
Status kvWrite(const KVCacheView &cache, const float *k, int64_t kStride,
               const float *v, int64_t vStride, const int64_t *slotMapping,
               int64_t numTokens, ThreadPool &pool = ThreadPool::global());

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_KVCACHE_H
