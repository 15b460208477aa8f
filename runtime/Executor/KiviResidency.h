//===- KiviResidency.h - Full-precision window of int2 (KIVI) caches -*- C++
//-*-===//
//
// KIVI keeps the newest tokens of each sequence in full precision and
// quantizes keys per channel over a whole group of tokens, which only exists
// once the group is complete. In Folio's paged form the group is a block:
// a block is "resident" (its K and V rows in f32, in an entry of the
// residual pools) while it is being written or holds one of its sequence's
// newest `residual` tokens, and is quantized to int2 once neither holds.
//
// The executor decides this itself from each step's serving-contract
// arrays, so the scheduler and the block pool know nothing of it:
// - a block this step writes becomes resident (an int2 block that is
//   written again from a slot past 0 is widened back first);
// - a block a scheduled sequence reads within its window stays resident;
// - every other resident block is quantized over the slots written to it
//   and its entry reused. A block whose sequence is not scheduled this step
//   is quantized early: that costs precision, never correctness.
// Entries are few (about residual / block + 1 per scheduled sequence), so
// the pools are outside the KV budget, as KIVI counts them.
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

  /// Before a step runs: quantizes the blocks that left every window,
  /// makes the step's written blocks resident, and points each cache view
  /// (all of them int2 caches of this geometry) at the residency table and
  /// its residual pools. Errors name the sequence or slot at fault; on an
  /// error nothing has been written.
  Status prepare(const ForwardBatch &batch,
                 const std::vector<cpu::KVCacheView *> &caches);

  /// Entry of `block`, or -1 when it is quantized.
  int32_t entryOf(int64_t block) const { return residentIndex[size_t(block)]; }
  /// Slots written to a resident block so far.
  int64_t filledOf(int64_t block) const { return filled[size_t(block)]; }
  int64_t entriesInUse() const { return int64_t(residentBlocks.size()); }

private:
  int32_t allocateEntry(const std::vector<cpu::KVCacheView *> &caches);

  int64_t numBlocks = 0, blockSize = 0, residual = 0;
  std::vector<int32_t> residentIndex; ///< [numBlocks]
  std::vector<int64_t> filled;        ///< [numBlocks], resident blocks only
  std::vector<int64_t> residentBlocks;
  std::vector<int32_t> freeEntries;
  int64_t numEntries = 0;
  /// Per cache (in the order prepare gets them): its K and V pools.
  std::vector<std::vector<float>> kPools, vPools;
};

} // namespace folio::exec

#endif // FOLIO_RUNTIME_EXECUTOR_KIVIRESIDENCY_H
