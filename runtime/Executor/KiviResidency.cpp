//===- KiviResidency.cpp - Full-precision window of int2 (KIVI) caches ----===//

#include "runtime/Executor/KiviResidency.h"

#include "codegen/CPU/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <string>

namespace folio::exec {

void KiviResidency::reset(int64_t blocks, int64_t block, int64_t window) {
  numBlocks = blocks;
  blockSize = block;
  residual = window;
  kPools.clear();
  vPools.clear();
  numEntries = 0;
  step = 0;
  lastUsed.assign(size_t(blocks), -1);
  firstOff.assign(size_t(blocks), -1);
  lastOff.assign(size_t(blocks), -1);
  state.assign(size_t(blocks), 0);
  forgetAll();
}

void KiviResidency::forgetAll() {
  residentIndex.assign(size_t(numBlocks), -1);
  filled.assign(size_t(numBlocks), 0);
  residentBlocks.clear();
  freeEntries.clear();
  for (int64_t e = numEntries - 1; e >= 0; --e)
    freeEntries.push_back(int32_t(e));
}

void KiviResidency::reserveEntries(
    int64_t entries, const std::vector<cpu::KVCacheView *> &caches) {
  if (entries <= numEntries)
    return;
  int64_t grown = std::max(entries, numEntries * 2);
  for (int64_t e = numEntries; e < grown; ++e)
    freeEntries.push_back(int32_t(e));
  numEntries = grown;
  // Each cache's own row size: layers may differ in heads and head_dim.
  for (size_t c = 0; c < caches.size(); ++c) {
    size_t floats = size_t(numEntries) * size_t(blockSize) *
                    size_t(caches[c]->slotElements());
    kPools[c].resize(floats);
    vPools[c].resize(floats);
  }
}

void KiviResidency::bind(const std::vector<cpu::KVCacheView *> &caches) {
  for (size_t c = 0; c < caches.size(); ++c) {
    cpu::KVCacheView &v = *caches[c];
    v.residentIndex = residentIndex.data();
    v.kResidual = kPools[c].data();
    v.vResidual = vPools[c].data();
    v.residualEntries = numEntries;
  }
}

Status KiviResidency::quantize(const std::vector<int64_t> &blocks,
                               const std::vector<cpu::KVCacheView *> &caches) {
  int64_t n = int64_t(blocks.size() * caches.size());
  std::atomic<bool> failed{false};
  std::string message;
  cpu::ThreadPool::global().parallelFor(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t block = blocks[size_t(i) / caches.size()];
      cpu::KVCacheView &v = *caches[size_t(i) % caches.size()];
      if (filled[size_t(block)] == 0)
        continue;
      cpu::Status s = cpu::kiviQuantizeBlock(v, block, filled[size_t(block)]);
      if (!s.ok() && !failed.exchange(true))
        message = s.message();
    }
  });
  if (failed)
    return Status::internal("int2 KV cache: " + message);
  return Status::ok();
}

Status KiviResidency::prepare(const ForwardBatch &batch,
                              const std::vector<cpu::KVCacheView *> &caches) {
  if (kPools.size() != caches.size()) {
    // A different set of caches: nothing resident can be trusted.
    kPools.assign(caches.size(), {});
    vPools.assign(caches.size(), {});
    numEntries = 0;
    forgetAll();
  }
  ++step;
  // Check everything this reads before changing anything.
  const int64_t seqs = int64_t(batch.seqLens.size());
  if (int64_t(batch.queryStartLoc.size()) != seqs + 1 ||
      int64_t(batch.blockTables.size()) != seqs * batch.maxBlocks)
    return Status::invalidArgument(
        "int2 KV cache: the batch's seq_lens, query_start_loc and "
        "block_tables disagree");
  // Blocks this step writes, with the first and last slot offset written.
  // The per-block scratch is kept across steps and only its touched
  // entries are cleared, so a step costs what it touches, not numBlocks.
  std::vector<int64_t> written, held;
  struct ClearScratch {
    KiviResidency &r;
    const std::vector<int64_t> &written, &held;
    ~ClearScratch() {
      for (int64_t b : written)
        r.firstOff[size_t(b)] = r.lastOff[size_t(b)] = -1;
      for (int64_t b : held)
        r.state[size_t(b)] = 0;
    }
  } clear{*this, written, held};
  for (size_t t = 0; t < batch.slotMapping.size(); ++t) {
    int64_t slot = batch.slotMapping[t];
    if (slot < 0)
      continue;
    int64_t b = slot / blockSize, off = slot % blockSize;
    if (b >= numBlocks)
      return Status::invalidArgument(
          "int2 KV cache: slot " + std::to_string(slot) + " of token " +
          std::to_string(t) + " is past the cache's " +
          std::to_string(numBlocks * blockSize) + " slots");
    if (firstOff[size_t(b)] < 0) {
      written.push_back(b);
      firstOff[size_t(b)] = off;
    }
    firstOff[size_t(b)] = std::min(firstOff[size_t(b)], off);
    lastOff[size_t(b)] = std::max(lastOff[size_t(b)], off);
  }
  // Per block: 2 = read within a scheduled sequence's window (or written),
  // 1 = held by a scheduled sequence before its window (aged), 0 = held by
  // no scheduled sequence.
  for (int64_t s = 0; s < seqs; ++s) {
    int64_t len = batch.seqLens[size_t(s)];
    int64_t qLen = int64_t(batch.queryStartLoc[size_t(s + 1)]) -
                   batch.queryStartLoc[size_t(s)];
    if (len <= 0 || qLen < 0 || qLen > len)
      continue; // attention's validation names it
    int64_t from = std::max<int64_t>(0, len - residual);
    int64_t last = (len - 1) / blockSize;
    if (last >= batch.maxBlocks)
      return Status::invalidArgument(
          "int2 KV cache: sequence " + std::to_string(s) + " of " +
          std::to_string(len) + " tokens needs more than its " +
          std::to_string(batch.maxBlocks) + " block-table entries");
    for (int64_t i = 0; i <= last; ++i) {
      int64_t b = batch.blockTables[size_t(s * batch.maxBlocks + i)];
      if (b < 0 || b >= numBlocks)
        return Status::invalidArgument(
            "int2 KV cache: sequence " + std::to_string(s) +
            " block-table entry " + std::to_string(i) + " = " +
            std::to_string(b) + " is outside [0, " + std::to_string(numBlocks) +
            ")");
      // A block shared through the prefix cache may sit in one sequence's
      // window and before another's: the window wins.
      char here = (i + 1) * blockSize > from ? 2 : 1;
      if (state[size_t(b)] == 0)
        held.push_back(b);
      state[size_t(b)] = std::max(state[size_t(b)], here);
    }
  }
  for (int64_t b : written) {
    if (state[size_t(b)] == 0)
      held.push_back(b);
    state[size_t(b)] = 2;
  }

  // Which resident blocks to quantize: every aged one, then the least
  // recently used of the unheld ones beyond a slack of what this step needs.
  std::vector<int64_t> evict, keep, unheld;
  int64_t needed = 0;
  for (int64_t b : written)
    needed += residentIndex[size_t(b)] < 0;
  for (int64_t b : residentBlocks) {
    if (state[size_t(b)] == 2) {
      lastUsed[size_t(b)] = step;
      keep.push_back(b);
    } else if (state[size_t(b)] == 1) {
      evict.push_back(b);
    } else {
      unheld.push_back(b);
    }
  }
  int64_t inUse = int64_t(keep.size()) + needed;
  int64_t slack = std::max<int64_t>(inUse, 16);
  std::sort(unheld.begin(), unheld.end(), [&](int64_t a, int64_t b) {
    return lastUsed[size_t(a)] > lastUsed[size_t(b)];
  });
  for (size_t i = 0; i < unheld.size(); ++i)
    (int64_t(i) < slack ? keep : evict).push_back(unheld[i]);

  reserveEntries(int64_t(keep.size()) + needed, caches);
  bind(caches);
  if (Status s = quantize(evict, caches); !s) {
    forgetAll();
    return s;
  }
  for (int64_t b : evict) {
    freeEntries.push_back(residentIndex[size_t(b)]);
    residentIndex[size_t(b)] = -1;
    filled[size_t(b)] = 0;
  }
  residentBlocks.swap(keep);

  // Written blocks become resident. A block written from slot 0 is fresh
  // (a new owner), whatever it held; one continued past slot 0 keeps the
  // slots before, widened back from int2 if it had been quantized.
  for (int64_t b : written) {
    int64_t first = firstOff[size_t(b)];
    lastUsed[size_t(b)] = step;
    if (residentIndex[size_t(b)] < 0) {
      int32_t e = freeEntries.back();
      freeEntries.pop_back();
      residentIndex[size_t(b)] = e;
      residentBlocks.push_back(b);
      if (first > 0)
        for (cpu::KVCacheView *v : caches)
          if (cpu::Status s = cpu::kiviDequantizeBlock(*v, b, first, e);
              !s.ok()) {
            forgetAll();
            return Status::internal("int2 KV cache: " + s.message());
          }
      filled[size_t(b)] = first;
    } else if (first == 0) {
      filled[size_t(b)] = 0;
    }
    filled[size_t(b)] = std::max(filled[size_t(b)], lastOff[size_t(b)] + 1);
  }
  return Status::ok();
}

} // namespace folio::exec
