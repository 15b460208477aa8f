//===- AttentionTile.h - One work item of paged attention -------*- C++ -*-===//
//
// Internal: the driver (PagedAttention.cpp) validates and splits the batch;
// one implementation per ISA computes a tile.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_ATTENTIONTILE_H
#define FOLIO_CODEGEN_CPU_ATTENTIONTILE_H

#include "codegen/CPU/DType.h"
#include "codegen/CPU/KVRowLoad.h"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

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
  /// The sequence has at most kDecodeLikeTokens query tokens in this call
  /// (a decode or a speculative verify step): its rows take the kernel a
  /// token decoded alone takes, never the prefill ones (transposed, AMX).
  bool decodeLike = false;
  const int32_t *blockTable = nullptr;
  int64_t blockSize = 0;
  const void *kPool = nullptr;
  const void *vPool = nullptr;
  /// int8 / int4: the params pools (uint16 f16 {scale, min} per group).
  const uint16_t *kParams = nullptr;
  const uint16_t *vParams = nullptr;
  DType dtype = DType::F32;
  int64_t quantGroup = 0; ///< int8 / int4: elements per params group
  float kScale = 1.0f;    ///< fp8: the static scales of this kv head
  float vScale = 1.0f;
  size_t rowBytes = 0;   ///< one kv head's row in a data pool
  size_t slotBytes = 0;  ///< one slot (all kv heads) in a data pool
  int64_t paramRow = 0;  ///< uint16 params of one kv head's row (0: none)
  int64_t paramSlot = 0; ///< uint16 params of one slot
  /// int2 (KIVI): the cache's residentIndex [numBlocks] and residual pools
  /// ([entries][blockSize][numKvHeads][headDim] f32); kParams then holds
  /// per-block, per-channel params [numBlocks][numKvHeads][headDim][2].
  const int32_t *residentIndex = nullptr;
  const float *kResidual = nullptr;
  const float *vResidual = nullptr;
  int64_t numKvHeads = 0;
  float scale = 1.0f;
  float softCap = 0.0f;
  int64_t window = 0;
  /// Split-K: only keys in [keyBegin, keyEnd) are read (besides the causal
  /// and window limits).
  int64_t keyBegin = 0;
  int64_t keyEnd = INT64_MAX;
  /// Split-K: when set, the tile writes row r's softmax-normalised output
  /// over its keys to partialOut[r * headDim ..] and their log-sum-exp (in
  /// natural-log units of the scaled, capped scores; -inf if the row saw
  /// none) to partialLse[r], instead of writing `out`. Rows are ordered as
  /// in the tile: token-major, then the group's heads.
  float *partialOut = nullptr;
  float *partialLse = nullptr;
};

/// Keys processed per online-softmax step; bounds the scratch independent
/// of the cache's block size. Chunks end at multiples of it (absolute key
/// positions; a tile's first chunk may be shorter), so a row's keys fall
/// into the same chunks, and its softmax rescales at the same keys, whether
/// the tile's first row is the row itself or an earlier token whose window
/// starts lower.
constexpr int64_t kKeyChunk = 64;

/// Query rows (tokens x group heads) one AVX-512 pass keeps in vector lanes.
constexpr int64_t kLaneRows = 64;

/// Offsets of the tile's kv-head rows at consecutive key positions in the
/// data pools (bytes) and the params pools (uint16): one block-table
/// lookup per block, not a division per key. int2 caches also need the
/// block's residency (residentEntry) and, for resident blocks, the row's
/// offset in the residual pools.
class KvRowCursor {
public:
  KvRowCursor(const AttentionTile &a, int64_t pos)
      : table(a.blockTable), resident(a.residentIndex), blockSize(a.blockSize),
        slotBytes(a.slotBytes), headBytes(size_t(a.kvHead) * a.rowBytes),
        paramSlot(size_t(a.paramSlot)),
        paramHead(size_t(a.kvHead * a.paramRow)), kvHead(a.kvHead),
        numKvHeads(a.numKvHeads), headDim(a.headDim), block(pos / a.blockSize),
        inBlock(pos % a.blockSize) {}
  /// Only positions the tile reads may be asked for: the table entries
  /// past them need not be valid, or exist.
  size_t offset() { return slot() * slotBytes + headBytes; }
  size_t paramOffset() { return slot() * paramSlot + paramHead; }
  /// int2: the residual entry of the current block, -1 when quantized.
  int64_t residentEntry() {
    slot();
    return entry;
  }
  /// int2, resident blocks: offset (in floats) of the row in a residual
  /// pool.
  size_t residualOffset() {
    slot();
    return size_t(((entry * blockSize + inBlock) * numKvHeads + kvHead) *
                  headDim);
  }
  /// int2, quantized blocks: offset (uint16) of the block's per-channel
  /// key params for this kv head.
  size_t blockParamOffset() {
    slot();
    return size_t((physBlock * numKvHeads + kvHead) * headDim * 2);
  }
  void next() {
    ++current;
    if (++inBlock == blockSize) {
      inBlock = 0;
      ++block;
      stale = true;
    }
  }

private:
  size_t slot() {
    if (stale) {
      physBlock = table[block];
      current = size_t(physBlock * blockSize + inBlock);
      entry = resident ? resident[physBlock] : -1;
      stale = false;
    }
    return current;
  }

  const int32_t *table;
  const int32_t *resident;
  int64_t blockSize;
  size_t slotBytes, headBytes, paramSlot, paramHead;
  int64_t kvHead, numKvHeads, headDim;
  int64_t block, inBlock;
  int64_t physBlock = 0, entry = -1;
  size_t current = 0;
  bool stale = true;
};

/// Where one row of a pool is: its bytes and its params (null for types
/// without, and for int2 resident rows, which are f32).
struct KvRowRef {
  const char *row;
  const uint16_t *params;
};

/// One of the tile's pools (K or V): where a row is and how to widen it.
struct KvPool {
  const char *data;
  const uint16_t *params;
  KvRowFormat format;
  const float *residual = nullptr; ///< int2: the residual pool

  /// The row at the cursor's position. int2: the f32 row in the residual
  /// pool for a resident block (params null), else the codes with the
  /// block's per-channel params (K) or the slot's per-group ones (V).
  KvRowRef at(KvRowCursor &c) const {
    if (format.dtype != DType::I2)
      return {data + c.offset(), params ? params + c.paramOffset() : nullptr};
    if (c.residentEntry() >= 0)
      return {reinterpret_cast<const char *>(residual + c.residualOffset()),
              nullptr};
    return {data + c.offset(),
            params + (format.kiviKey ? c.blockParamOffset() : c.paramOffset())};
  }
};

inline KvPool kPoolOf(const AttentionTile &a) {
  KvRowFormat f{a.dtype, a.headDim, a.quantGroup, a.kScale};
  f.kiviKey = a.dtype == DType::I2;
  return {static_cast<const char *>(a.kPool), a.kParams, f, a.kResidual};
}

inline KvPool vPoolOf(const AttentionTile &a) {
  return {static_cast<const char *>(a.vPool), a.vParams,
          KvRowFormat{a.dtype, a.headDim, a.quantGroup, a.vScale}, a.vResidual};
}

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

/// First key position query position `pos` may see (window only; the
/// tile's key range is applied by the callers of firstTileKey).
inline int64_t lowestKey(const AttentionTile &a, int64_t pos) {
  if (a.window <= 0 || pos - a.window + 1 <= 0)
    return 0;
  return pos - a.window + 1;
}

/// First key the tile reads: the first row's window start, clipped to the
/// split's range.
inline int64_t firstTileKey(const AttentionTile &a) {
  int64_t lo = lowestKey(a, a.firstPos);
  return lo > a.keyBegin ? lo : a.keyBegin;
}

/// Last key the tile reads, for rows up to position lastPos.
inline int64_t lastTileKey(const AttentionTile &a, int64_t lastPos) {
  return lastPos < a.keyEnd - 1 ? lastPos : a.keyEnd - 1;
}

/// End (exclusive) of the key chunk that starts at c0: the next multiple of
/// `chunk` (kKeyChunk says why), or past the tile's last key.
inline int64_t keyChunkEnd(int64_t c0, int64_t chunk, int64_t lastKey) {
  int64_t end = (c0 / chunk + 1) * chunk;
  return end < lastKey + 1 ? end : lastKey + 1;
}

/// Split-K ("flash-decoding"): a decode-like sequence's keys are cut at
/// multiples of this many key positions into ranges processed as separate
/// work items and merged by their log-sum-exps. The boundaries are absolute
/// positions, never chosen from the batch or the pool, so a token's rows
/// are reduced in the same ranges whatever else the step holds: decoded
/// alone, beside other sequences, or as one of a speculative step's
/// tokens. A multiple of both tiles' key chunks (kKeyChunk and the
/// transposed tile's 32), so a range's chunks are the ones its keys take
/// unsplit. 1024 keys keep the merge and a work item's setup small against
/// the range's work (on 1-2 threads, 512 measured 2-5 % slower at 528 and
/// 4096 keys, docs/cpu-kernels.md), and long contexts still give a large
/// pool several items per (sequence, kv head).
constexpr int64_t kSplitRangeKeys = 1024;

/// Key ranges a decode-like tile reading keys [firstKey, lastKey] is cut
/// into: one when the keys lie within one range (or split-K is off).
int64_t splitRangeCount(int64_t firstKey, int64_t lastKey);
/// Turns split-K off (benchmarks compare with and without it); not for use
/// while attention runs. Returns the previous setting.
bool setSplitKEnabled(bool enabled);

/// A sequence with at most this many query tokens in a call is decoding
/// or verifying up to 16 drafts (folio-generate's --num-speculative-tokens
/// limit) and its bonus token. Its rows must give bitwise what each would
/// give decoded alone, or a speculative greedy run could pick other tokens
/// than a plain one: they take the kernel one token of the same GQA group
/// takes (the row or the transposed tile by group size), never the AMX
/// tile's bf16 products. Longer steps are prefill.
constexpr int64_t kDecodeLikeTokens = 17;

/// Query rows per work item when the AMX tile is in use: its K/V
/// conversion is shared by all of them, so larger than one AVX-512 pass.
constexpr int64_t kAmxTileRows = 256;
/// Tiles with fewer rows take the AVX-512 kernels even with AMX on.
constexpr int64_t kAmxMinRows = 32;

/// Whether pagedAttention uses the AMX bf16 tile for a call: the host has
/// AMX-BF16 and AVX512-BF16, the kernel ISA is AVX-512, the OS granted the
/// tile state, headDim is a multiple of 32 up to 256, and the mode allows
/// it: "auto" (the default) when the caller allows bf16 products
/// (`allowBf16`), "force" always, "off" never. FOLIO_ATTENTION_AMX=0 or
/// =force sets the initial mode.
bool amxAttentionUsable(int64_t headDim, bool allowBf16);
enum class AmxMode { Off = 0, Auto = 1, Force = 2 };
/// Sets the mode (tests and benchmarks; not while attention runs); returns
/// the previous one.
AmxMode setAmxAttentionMode(AmxMode mode);
/// The AMX tile for tiles of at least kAmxMinRows rows, else
/// attendTileAvx512.
void attendTileAmx(const AttentionTile &tile);

void attendTileScalar(const AttentionTile &tile);
/// The row-oriented tile with AVX2 + FMA inner loops.
void attendTileAvx2(const AttentionTile &tile);
/// Picks the AVX-512 formulation by the tile's row count.
void attendTileAvx512(const AttentionTile &tile);
/// Rows in vector lanes (no horizontal sums): for tiles of many rows.
void attendTileTransposedAvx512(const AttentionTile &tile);
/// Tiles of at least `rows` query rows take the transposed AVX-512 kernel
/// (default 12). Tests and benchmarks force either kernel with it; not
/// for use while attention runs. Returns the previous value.
int64_t setTransposedMinRows(int64_t rows);

/// Query (or output) row r of the tile: token r / group, head r % group of
/// the kv head's group.
template <typename T>
inline T *queryRow(const AttentionTile &a, T *base, int64_t r) {
  int64_t t = a.tokenBegin + r / a.groupSize;
  int64_t h = a.kvHead * a.groupSize + r % a.groupSize;
  return base + (t * a.numHeads + h) * a.headDim;
}

/// Scratch reused across tiles on a thread, 64-byte aligned.
inline float *threadScratch(size_t floats) {
  thread_local std::vector<float> buf;
  if (buf.size() < floats + 16)
    buf.resize(floats + 16);
  uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<float *>((p + 63) & ~uintptr_t(63));
}

} // namespace folio::cpu::detail

#endif // FOLIO_CODEGEN_CPU_ATTENTIONTILE_H
