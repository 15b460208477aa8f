//===- AttentionTile.h - One work item of paged attention -------*- C++ -*-===//
//
// Internal: the driver (PagedAttention.cpp) validates and splits the batch;
// one implementation per ISA computes a tile.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_ATTENTIONTILE_H
#define FOLIO_CODEGEN_CPU_ATTENTIONTILE_H

#include "codegen/CPU/DType.h"

#include <cstdint>

namespace folio::cpu::detail {

/// Query tokens [tokenBegin, tokenEnd) of one sequence, all query heads of
/// kv head `kvHead`.
struct AttentionTile {
  const float *q = nullptr; ///< [T, numHeads, headDim] base
  float *out = nullptr;     ///< [T, numHeads, headDim] base
  int64_t numHeads = 0;
  int64_t headDim = 0;
  int64_t groupSize = 1; ///< query heads per kv head
  int64_t kvHead = 0;
  int64_t tokenBegin = 0;
  int64_t tokenEnd = 0;
  int64_t firstPos = 0; ///< position of tokenBegin in its sequence
  const int32_t *blockTable = nullptr;
  int64_t blockSize = 0;
  const void *kPool = nullptr;
  const void *vPool = nullptr;
  DType dtype = DType::F32;
  int64_t slotElements = 0; ///< numKvHeads * headDim
  float scale = 1.0f;
  float softCap = 0.0f;
  int64_t window = 0;
};

/// Keys processed per online-softmax step; bounds the scratch independent
/// of the cache's block size.
constexpr int64_t kKeyChunk = 64;

/// Query rows (tokens x group heads) one AVX-512 pass keeps in vector lanes.
constexpr int64_t kLaneRows = 64;

/// Byte offset of key position `pos`'s row of the tile's kv head in a pool.
inline size_t kvRowOffset(const AttentionTile &a, int64_t pos) {
  int64_t slot = int64_t(a.blockTable[pos / a.blockSize]) * a.blockSize +
                 pos % a.blockSize;
  return size_t(slot * a.slotElements + a.kvHead * a.headDim) *
         dtypeSize(a.dtype);
}

/// First key position query position `pos` sees.
inline int64_t lowestKey(const AttentionTile &a, int64_t pos) {
  if (a.window <= 0 || pos - a.window + 1 <= 0)
    return 0;
  return pos - a.window + 1;
}

void attendTileScalar(const AttentionTile &tile);
/// Picks the AVX-512 formulation by the tile's row count.
void attendTileAvx512(const AttentionTile &tile);
/// Rows in vector lanes (no horizontal sums): for tiles of many rows.
void attendTileTransposedAvx512(const AttentionTile &tile);
/// Tiles of at least `rows` query rows take the transposed AVX-512 kernel
/// (default 12). Tests and benchmarks force either kernel with it; not
/// for use while attention runs. Returns the previous value.
int64_t setTransposedMinRows(int64_t rows);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_ATTENTIONTILE_H
