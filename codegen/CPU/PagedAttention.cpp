//===- PagedAttention.cpp - Validation and work split ---------------------===//

#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/AttentionTile.h"
#include "codegen/CPU/CPUFeatures.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/Validate.h"

#include <atomic>
#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace folio::cpu {

using namespace detail;

namespace {

std::string seqMsg(int64_t s, const std::string &what) {
  return "pagedAttention: sequence " + std::to_string(s) + ": " + what;
}

/// First key position sequence s reads: its first query's window start.
int64_t firstKeyRead(int64_t seqLen, int64_t queryLen, int64_t window) {
  int64_t firstQueryPos = seqLen - queryLen;
  if (window <= 0 || firstQueryPos - window + 1 <= 0)
    return 0;
  return firstQueryPos - window + 1;
}

/// Query rows per work item: one pass of the lane-transposed kernel, so
/// each loaded key is shared by up to 64 rows, yet long prefills still
/// split into many items. The AMX tile converts each K/V row once for all
/// its rows, so it takes more.
int64_t tileTokens(int64_t groupSize, bool amx) {
  int64_t t = (amx ? kAmxTileRows : kLaneRows) / groupSize;
  return t > 0 ? t : 1;
}

/// out for the tile's rows from the ranges' partial outputs and log-sum-
/// exps: out = sum_i exp(lse_i - L) o_i with L = log sum_i exp(lse_i).
/// Always in range order, so the result does not depend on which thread
/// merges.
void mergeSplits(const AttentionTile &t, const float *po, const float *lse,
                 int64_t splits) {
  const int64_t rows = (t.tokenEnd - t.tokenBegin) * t.groupSize;
  const int64_t hd = t.headDim;
  for (int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (int64_t i = 0; i < splits; ++i)
      m = lse[i * rows + r] > m ? lse[i * rows + r] : m;
    int64_t tok = t.tokenBegin + r / t.groupSize;
    int64_t h = t.kvHead * t.groupSize + r % t.groupSize;
    float *dst = t.out + (tok * t.numHeads + h) * hd;
    for (int64_t d = 0; d < hd; ++d)
      dst[d] = 0.0f;
    // Every row sees its own key, so m is finite; a range the row saw no
    // key of has lse = -inf and weight 0.
    float total = 0.0f;
    for (int64_t i = 0; i < splits; ++i) {
      float l = lse[i * rows + r];
      if (l == -INFINITY)
        continue;
      float w = std::exp(l - m);
      total += w;
      const float *o = po + (i * rows + r) * hd;
      for (int64_t d = 0; d < hd; ++d)
        dst[d] += w * o[d];
    }
    float inv = total > 0.0f ? 1.0f / total : 0.0f;
    for (int64_t d = 0; d < hd; ++d)
      dst[d] *= inv;
  }
}

} // namespace

namespace {
std::atomic<bool> splitKEnabled{true};
} // namespace

bool detail::setSplitKEnabled(bool enabled) {
  return splitKEnabled.exchange(enabled);
}

int64_t detail::splitRangeCount(int64_t firstKey, int64_t lastKey) {
  if (!splitKEnabled.load(std::memory_order_relaxed) || lastKey < firstKey)
    return 1;
  return lastKey / kSplitRangeKeys - firstKey / kSplitRangeKeys + 1;
}

Status validatePagedAttention(const KVCacheView &cache, const RaggedBatch &b,
                              const AttentionParams &p) {
  const char *kernel = "pagedAttention";
  FOLIO_RETURN_IF_ERROR(validateKVCache(cache));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "numHeads", p.numHeads));
  if (p.numHeads % cache.numKvHeads != 0)
    return Status::error(
        "pagedAttention: numHeads " + std::to_string(p.numHeads) +
        " is not a multiple of numKvHeads " + std::to_string(cache.numKvHeads));
  if (!std::isfinite(p.scale))
    return Status::error("pagedAttention: scale must be finite");
  FOLIO_RETURN_IF_ERROR(
      checkNonNegative(kernel, "slidingWindow", p.slidingWindow));
  if (!(p.softCap >= 0.0f) || std::isinf(p.softCap))
    return Status::error("pagedAttention: softCap must be finite and >= 0");
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numTokens", b.numTokens));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numSeqs", b.numSeqs));
  FOLIO_RETURN_IF_ERROR(
      checkNonNegative(kernel, "maxBlocksPerSeq", b.maxBlocksPerSeq));
  if (!b.queryStartLoc)
    return Status::error("pagedAttention: queryStartLoc is null");
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "seqLens", b.seqLens, b.numSeqs));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "blockTables", b.blockTables,
                                     b.numSeqs * b.maxBlocksPerSeq));
  if (b.queryStartLoc[0] != 0)
    return Status::error("pagedAttention: queryStartLoc[0] must be 0");
  if (b.queryStartLoc[b.numSeqs] != b.numTokens)
    return Status::error("pagedAttention: queryStartLoc[numSeqs] = " +
                         std::to_string(b.queryStartLoc[b.numSeqs]) +
                         " but numTokens = " + std::to_string(b.numTokens));
  for (int64_t s = 0; s < b.numSeqs; ++s) {
    int64_t qLen = int64_t(b.queryStartLoc[s + 1]) - b.queryStartLoc[s];
    int64_t len = b.seqLens[s];
    if (qLen < 0)
      return Status::error(seqMsg(s, "queryStartLoc decreases"));
    if (len < qLen)
      return Status::error(
          seqMsg(s, "seqLen " + std::to_string(len) + " is shorter than its " +
                        std::to_string(qLen) + " query tokens"));
    if (qLen == 0)
      continue;
    int64_t blocks = (len + cache.blockSize - 1) / cache.blockSize;
    if (blocks > b.maxBlocksPerSeq)
      return Status::error(seqMsg(s, "seqLen " + std::to_string(len) +
                                         " needs " + std::to_string(blocks) +
                                         " blocks but block tables hold " +
                                         std::to_string(b.maxBlocksPerSeq)));
    // Blocks wholly outside every query's window may already be released
    // (vLLM points them at a null block); only the ones read must be valid.
    int64_t first = firstKeyRead(len, qLen, p.slidingWindow) / cache.blockSize;
    const int32_t *table = b.blockTables + s * b.maxBlocksPerSeq;
    for (int64_t i = first; i < blocks; ++i)
      if (table[i] < 0 || table[i] >= cache.numBlocks)
        return Status::error(
            seqMsg(s, "block table entry " + std::to_string(i) + " = " +
                          std::to_string(table[i]) + " is outside [0, " +
                          std::to_string(cache.numBlocks) + ")"));
      else if (isKivi(cache.dtype) &&
               cache.residentIndex[table[i]] >= cache.residualEntries)
        return Status::error(seqMsg(
            s, "block " + std::to_string(table[i]) + " has residual entry " +
                   std::to_string(cache.residentIndex[table[i]]) +
                   " outside [0, " + std::to_string(cache.residualEntries) +
                   ")"));
  }
  return Status::success();
}

Status pagedAttention(const float *q, const KVCacheView &cache,
                      const RaggedBatch &batch, const AttentionParams &params,
                      float *out, ThreadPool &pool) {
  FOLIO_RETURN_IF_ERROR(validatePagedAttention(cache, batch, params));
  int64_t rowElems = params.numHeads * cache.headDim;
  FOLIO_RETURN_IF_ERROR(
      checkPointer("pagedAttention", "q", q, batch.numTokens * rowElems));
  FOLIO_RETURN_IF_ERROR(
      checkPointer("pagedAttention", "out", out, batch.numTokens * rowElems));

  AttentionTile base;
  base.q = q;
  base.out = out;
  base.numHeads = params.numHeads;
  base.headDim = cache.headDim;
  base.groupSize = params.numHeads / cache.numKvHeads;
  base.blockSize = cache.blockSize;
  base.kPool = cache.k;
  base.vPool = cache.v;
  base.kParams = static_cast<const uint16_t *>(cache.kParams);
  base.vParams = static_cast<const uint16_t *>(cache.vParams);
  base.dtype = cache.dtype;
  base.quantGroup = cache.group;
  base.rowBytes = cache.headRowBytes();
  base.slotBytes = cache.slotBytes();
  base.paramRow = kvRowParams(cache.dtype, cache.headDim, cache.group);
  base.paramSlot = int64_t(cache.paramSlotBytes() / 2);
  base.numKvHeads = cache.numKvHeads;
  if (isKivi(cache.dtype)) {
    base.residentIndex = cache.residentIndex;
    base.kResidual = cache.kResidual;
    base.vResidual = cache.vResidual;
  }
  base.scale = params.scale;
  base.softCap = params.softCap;
  base.window = params.slidingWindow;

  // Work items, the most expensive (latest query tiles) first so the
  // dynamic schedule ends balanced.
  struct Item {
    int64_t seq, kvHead, tokenBegin, tokenEnd;
    int64_t keyBegin = 0, keyEnd = INT64_MAX;
    int64_t group = -1; ///< split-K group, -1 when not split
    int64_t split = 0;
  };
  std::vector<Item> items;
  const bool amx = amxAttentionUsable(cache.headDim, params.allowBf16);
  int64_t perTile = tileTokens(base.groupSize, amx);
  int64_t macs = 0; // q.k and p.V over every sequence's context
  for (int64_t s = 0; s < batch.numSeqs; ++s) {
    int64_t qBegin = batch.queryStartLoc[s], qEnd = batch.queryStartLoc[s + 1];
    macs += 2 * (qEnd - qBegin) * int64_t(batch.seqLens[s]) * params.numHeads *
            cache.headDim;
    for (int64_t end = qEnd; end > qBegin; end -= perTile) {
      int64_t begin = end - perTile > qBegin ? end - perTile : qBegin;
      for (int64_t h = 0; h < cache.numKvHeads; ++h)
        items.push_back({s, h, begin, end});
    }
  }

  // Split-K: decode-like tiles whose keys cross a multiple of
  // kSplitRangeKeys become one work item per range, each writing a partial
  // output and log-sum-exp that the last range to finish merges. One long
  // sequence would otherwise leave threads idle and each thread on one long
  // latency-bound stream. The ranges are absolute positions, so a token's
  // rows merge the same ranges in any batch (a row that sees none of a
  // range's keys gets lse = -inf there, which the merge skips, and a row
  // with keys in one range comes out of the merge as it would unsplit).
  struct SplitGroup {
    size_t outOffset, lseOffset;
    int64_t splits, rows;
  };
  std::vector<SplitGroup> groups;
  size_t partialFloats = 0;
  {
    std::vector<Item> split;
    for (const Item &it : items) {
      int64_t qLen =
          batch.queryStartLoc[it.seq + 1] - batch.queryStartLoc[it.seq];
      int64_t tokens = it.tokenEnd - it.tokenBegin;
      int64_t firstPos = batch.seqLens[it.seq] - qLen +
                         (it.tokenBegin - batch.queryStartLoc[it.seq]);
      int64_t lastPos = firstPos + tokens - 1;
      int64_t lo = firstKeyRead(lastPos + 1, tokens, params.slidingWindow);
      int64_t splits =
          qLen <= kDecodeLikeTokens ? splitRangeCount(lo, lastPos) : 1;
      if (splits <= 1) {
        split.push_back(it);
        continue;
      }
      SplitGroup g;
      g.rows = tokens * base.groupSize;
      g.splits = splits;
      g.outOffset = partialFloats;
      partialFloats += size_t(g.splits * g.rows * base.headDim);
      g.lseOffset = partialFloats;
      partialFloats += size_t(g.splits * g.rows);
      // Latest range first, as the items are ordered.
      const int64_t firstRange = lo / kSplitRangeKeys;
      for (int64_t i = g.splits - 1; i >= 0; --i) {
        Item part = it;
        part.keyBegin = (firstRange + i) * kSplitRangeKeys;
        part.keyEnd = part.keyBegin + kSplitRangeKeys;
        part.group = int64_t(groups.size());
        part.split = i;
        split.push_back(part);
      }
      groups.push_back(g);
    }
    items.swap(split);
  }
  // Reused by the calling thread: a decode step calls this once per layer.
  thread_local std::vector<float> partials;
  if (partials.size() < partialFloats)
    partials.resize(partialFloats);
  std::unique_ptr<std::atomic<int64_t>[]> finished(
      new std::atomic<int64_t>[groups.size()]);
  for (size_t i = 0; i < groups.size(); ++i)
    finished[i].store(0, std::memory_order_relaxed);
  float *partialBase = partials.data();

  const Isa isa = activeIsa();
  void (*attend)(const AttentionTile &) = amx ? attendTileAmx
                                          : isa == Isa::Avx512
                                              ? attendTileAvx512
                                          : isa == Isa::Avx2 ? attendTileAvx2
                                                             : attendTileScalar;
  // A small model's decode step runs on this thread (kSerialMacs).
  const int64_t grain = macs < kSerialMacs ? int64_t(items.size()) : 1;
  pool.parallelFor(int64_t(items.size()), grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Item &it = items[size_t(i)];
      AttentionTile tile = base;
      int64_t qBegin = batch.queryStartLoc[it.seq];
      int64_t qLen = batch.queryStartLoc[it.seq + 1] - qBegin;
      tile.kvHead = it.kvHead;
      if (cache.kScale) {
        tile.kScale = cache.kScale[it.kvHead];
        tile.vScale = cache.vScale[it.kvHead];
      }
      tile.tokenBegin = it.tokenBegin;
      tile.tokenEnd = it.tokenEnd;
      tile.firstPos = batch.seqLens[it.seq] - qLen + (it.tokenBegin - qBegin);
      tile.decodeLike = qLen <= kDecodeLikeTokens;
      tile.blockTable = batch.blockTables + it.seq * batch.maxBlocksPerSeq;
      tile.keyBegin = it.keyBegin;
      tile.keyEnd = it.keyEnd;
      if (it.group < 0) {
        attend(tile);
        continue;
      }
      const SplitGroup &g = groups[size_t(it.group)];
      float *po = partialBase + g.outOffset;
      float *lse = partialBase + g.lseOffset;
      tile.partialOut = po + it.split * g.rows * base.headDim;
      tile.partialLse = lse + it.split * g.rows;
      attend(tile);
      // The last range to finish merges; acq_rel makes the others'
      // partials visible to it.
      if (finished[size_t(it.group)].fetch_add(1, std::memory_order_acq_rel) ==
          g.splits - 1)
        mergeSplits(tile, po, lse, g.splits);
    }
  });
  return Status::success();
}

} // namespace folio::cpu
