//===- KiviResidency.h - Full-precision window of int2 (KIVI) caches -*- C++
//-*-===//
//
// KIVI keeps the newest tokens of each sequence in full precision and
// quantizes keys per channel over a whole group of tokens, which only exists
// once the group is complete. In Folio's paged form the group is a block:
// a block is "resident" (its K and V rows in f32, in an entry of the
// residual pools) while it is being written or holds one of its sequence's
// newest `residual` tokens, and is quantized to int2 once it has aged out.
//
// The executor decides this itself from each step's serving-contract
// arrays, so the scheduler and the block pool know nothing of it:
// - a block this step writes becomes resident (an int2 block that is
//   written again from a slot past 0 is widened back first);
// - a block a scheduled sequence reads within its window stays resident;
// - a block a scheduled sequence holds before its window has aged: it is
//   quantized over the slots written to it and its entry reused;
// - a resident block no scheduled sequence holds (its sequence finished,
//   was preempted, or sits out this step) is kept while the entries in use
//   stay within a slack of what the step needs, least recently used first
//   out, so a sequence that sits out a step keeps its window.
// A prefill writes all its blocks in f32 (and attends to them so, as KIVI's
// prefill does); they age at the next step. The pools therefore peak at
// about (tokens of the largest step + scheduled sequences x (residual +
// block)) rows, outside the KV block budget (docs/kv-cache-quantization.md).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_EXECUTOR_KIVIRESIDENCY_H
#define FOLIO_RUNTIME_EXECUTOR_KIVIRESIDENCY_H

#include "codegen/CPU/KVCache.h"
#include "runtime/Executor/Executor.h"
#include "runtime/Support/Status.h"

#include <cstdint>
#include <vector>

namespace folio::exec {

class KiviResidency {
public:
  /// Forgets everything: every block quantized, no entry in use.
  void reset(int64_t numBlocks, int64_t blockSize, int64_t residual);

  /// Before a step runs: quantizes the blocks that aged out, makes the
  /// step's written blocks resident, and points each cache view (all of
  /// them int2 caches of this block size, in the same order every call) at
  /// the residency table and its residual pools. A batch that does not
  /// match the cache is refused before anything changes; a kernel failure
  /// (an invalid view) forgets every window.
  Status prepare(const ForwardBatch &batch,
                 const std::vector<cpu::KVCacheView *> &caches);

  /// Entry of `block`, or -1 when it is quantized.
  int32_t entryOf(int64_t block) const { return residentIndex[size_t(block)]; }
  /// Slots written to a resident block so far.
  int64_t filledOf(int64_t block) const { return filled[size_t(block)]; }
  int64_t entriesInUse() const { return int64_t(residentBlocks.size()); }
  /// Entries the pools hold (in use or free).
  int64_t entriesAllocated() const { return numEntries; }

private:
  /// Grows every pool to at least `entries` entries (geometrically).
  void reserveEntries(int64_t entries,
                      const std::vector<cpu::KVCacheView *> &caches);
  void bind(const std::vector<cpu::KVCacheView *> &caches);
  /// Quantizes `blocks` in every cache, in parallel.
  Status quantize(const std::vector<int64_t> &blocks,
                  const std::vector<cpu::KVCacheView *> &caches);
  void forgetAll();

  int64_t numBlocks = 0, blockSize = 0, residual = 0;
  int64_t step = 0;
  std::vector<int32_t> residentIndex; ///< [numBlocks]
  std::vector<int64_t> filled;        ///< [numBlocks], resident blocks only
  std::vector<int64_t> lastUsed;      ///< [numBlocks], the step it was hot
  /// prepare's per-block scratch, all -1 / 0 between steps: the first and
  /// last slot offset written this step, and how a scheduled sequence
  /// holds the block (2 in a window or written, 1 aged, 0 not held).
  std::vector<int64_t> firstOff, lastOff;
  std::vector<char> state;
  std::vector<int64_t> residentBlocks;
  std::vector<int32_t> freeEntries;
  int64_t numEntries = 0;
  /// Per cache (in the order prepare gets them): its K and V pools.
  std::vector<std::vector<float>> kPools, vPools;
};

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_KIVIRESIDENCY_H
