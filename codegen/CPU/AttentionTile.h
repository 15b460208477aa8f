//===- AttentionTile.h - One work item of paged attention -------*- C++ -*-===//
//
// Internal: the driver (PagedAttention.cpp) validates and splits the batch;
// one implementation per ISA computes a tile.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_ATTENTIONTILE_H
#define FOLIO_CODEGEN_CPU_ATTENTIONTILE_H

#include "codegen/CPU/DType.h"

#include <cstddef>
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

/// Byte offsets in a pool of the tile's kv-head rows at consecutive key
/// positions: one block-table lookup per block, not a division per key.
class KvRowCursor {
public:
  KvRowCursor(const AttentionTile &a, int64_t pos)
      : table(a.blockTable), blockSize(a.blockSize),
        slotBytes(size_t(a.slotElements) * dtypeSize(a.dtype)),
        headBytes(size_t(a.kvHead * a.headDim) * dtypeSize(a.dtype)),
        block(pos / a.blockSize), inBlock(pos % a.blockSize) {}
  /// Only positions the tile reads may be asked for: the table entries
  /// past them need not be valid, or exist.
  size_t offset() {
    if (stale) {
      current =
          size_t(int64_t(table[block]) * blockSize + inBlock) * slotBytes +
          headBytes;
      stale = false;
    }
    return current;
  }
  void next() {
    current += slotBytes;
    if (++inBlock == blockSize) {
      inBlock = 0;
      ++block;
      stale = true;
    }
  }

private:
  const int32_t *table;
  int64_t blockSize;
  size_t slotBytes, headBytes;
  int64_t block, inBlock;
  size_t current = 0;
  bool stale = true;
};

/// Requests the cache lines of rows[j] (if any) into the cache.
struct RowPrefetch {
  const char *const *rows;
  size_t bytes;
  void operator()(int64_t j) const {
    if (!rows || !rows[j])
      return;
    // Into L2 only: a chunk ahead is more than L1 holds beside the chunk
    // being worked on.
    uintptr_t first = reinterpret_cast<uintptr_t>(rows[j]) & ~uintptr_t(63);
    uintptr_t last =
        (reinterpret_cast<uintptr_t>(rows[j]) + bytes - 1) & ~uintptr_t(63);
    for (uintptr_t line = first; line <= last; line += 64)
      __builtin_prefetch(reinterpret_cast<const void *>(line), 0, 2);
  }
};

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
