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

void attendTileScalar(const AttentionTile &tile);
void attendTileAvx512(const AttentionTile &tile);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_ATTENTIONTILE_H
