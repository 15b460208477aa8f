//===- AttentionChunk.h - A chunk of keys' cache rows -----------*- C++ -*-===//
//
// Internal, for the row-oriented attention tiles (AttentionTileImpl.inc):
// how a tile reads a cache's rows, and where a chunk of keys' K and V rows
// and their params are, gathered once per chunk (and used first as the
// previous chunk's prefetch targets).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_ATTENTIONCHUNK_H
#define FOLIO_CODEGEN_CPU_ATTENTIONCHUNK_H

#include "codegen/CPU/AttentionTile.h"

#include <cstddef>
#include <cstdint>

namespace folio::cpu::detail {

/// How a row tile reads a cache's rows: in registers, in their format (an
/// ISA implements the ones it can), or widened into an f32 scratch.
enum class RowSrc {
  F32,
  BF16,
  F16,
  FP8E4M3, ///< values before the head's static scale (folded into q, out)
  FP8E5M2,
  I8,     ///< codes with the row's scale and min folded into s and p
  Scratch ///< f32 rows widened into scratch by loadKvRows
};

/// Stride of a row's scores in the tiles' score scratch: a chunk plus the
/// 4-key blocks' overhang.
constexpr int64_t kSStride = kKeyChunk + 4;

/// Where a chunk's K and V rows and their params (null for types without)
/// are.
struct ChunkRows {
  const char *k[kKeyChunk], *v[kKeyChunk];
  const uint16_t *kPar[kKeyChunk], *vPar[kKeyChunk];
  int64_t n = 0;
};

/// The rows of keys [p0, p0 + n), n <= kKeyChunk: one block-table lookup
/// per block, then a stride per slot (the cursor's general form only for
/// int2, whose rows may live in the residual pools). Also requests their
/// params' cache lines into L2 (one range per block): a tile reads a
/// chunk's params before its rows, so they are asked for when the chunk is
/// gathered, a chunk ahead.
void gatherChunkRows(const AttentionTile &a, const KvPool &kp, const KvPool &vp,
                     int64_t p0, int64_t n, ChunkRows &c);

/// Requests into L2 every line of the chunk's rows: for the first chunk of
/// a tile, which has no chunk before it to ask ahead.
void prefetchChunkRows(const ChunkRows &c, size_t rowBytes);

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_ATTENTIONCHUNK_H
