//===- KiviResidency.cpp - Full-precision window of int2 (KIVI) caches ----===//

#include "runtime/Executor/KiviResidency.h"

#include <algorithm>

namespace folio::exec {

void KiviResidency::reset(int64_t blocks, int64_t block, int64_t window) {
  numBlocks = blocks;
  blockSize = block;
  residual = window;
  residentIndex.assign(size_t(blocks), -1);
  filled.assign(size_t(blocks), 0);
  residentBlocks.clear();
  freeEntries.clear();
  numEntries = 0;
  kPools.clear();
  vPools.clear();
}

int32_t
KiviResidency::allocateEntry(const std::vector<cpu::KVCacheView *> &caches) {
  if (!freeEntries.empty()) {
    int32_t e = freeEntries.back();
    freeEntries.pop_back();
    return e;
  }
  int32_t e = int32_t(numEntries++);
  size_t floats = size_t(numEntries) * size_t(blockSize) *
                  size_t(caches.empty() ? 0 : caches[0]->slotElements());
  for (size_t c = 0; c < caches.size(); ++c) {
    kPools[c].resize(floats);
    vPools[c].resize(floats);
  }
  return e;
}

Status KiviResidency::prepare(const ForwardBatch &batch,
                              const std::vector<cpu::KVCacheView *> &caches) {
  if (kPools.size() != caches.size()) {
    kPools.assign(caches.size(), {});
    vPools.assign(caches.size(), {});
  }
  // Check everything this reads before changing anything.
  const int64_t seqs = int64_t(batch.seqLens.size());
  if (int64_t(batch.queryStartLoc.size()) != seqs + 1 ||
      int64_t(batch.blockTables.size()) != seqs * batch.maxBlocks)
    return Status::invalidArgument(
        "int2 KV cache: the batch's seq_lens, query_start_loc and "
        "block_tables disagree");
  // Blocks this step writes, with the first and last slot offset written.
  std::vector<int64_t> written;
  std::vector<int64_t> firstOff(size_t(numBlocks), -1), lastOff;
  lastOff.assign(size_t(numBlocks), -1);
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
  // Blocks a sequence reads within its residual window stay resident.
  std::vector<char> hot(size_t(numBlocks), 0);
  for (int64_t b : written)
    hot[size_t(b)] = 1;
  for (int64_t s = 0; s < seqs; ++s) {
    int64_t len = batch.seqLens[size_t(s)];
    int64_t qLen = int64_t(batch.queryStartLoc[size_t(s + 1)]) -
                   batch.queryStartLoc[size_t(s)];
    if (len <= 0 || qLen < 0 || qLen > len)
      continue; // attention's validation names it
    int64_t from = std::max<int64_t>(0, len - residual);
    int64_t to = (len - 1) / blockSize;
    if (to >= batch.maxBlocks)
      return Status::invalidArgument(
          "int2 KV cache: sequence " + std::to_string(s) + " of " +
          std::to_string(len) + " tokens needs more than its " +
          std::to_string(batch.maxBlocks) + " block-table entries");
    for (int64_t i = from / blockSize; i <= to; ++i) {
      int64_t b = batch.blockTables[size_t(s * batch.maxBlocks + i)];
      if (b < 0 || b >= numBlocks)
        return Status::invalidArgument(
            "int2 KV cache: sequence " + std::to_string(s) +
            " block-table entry " + std::to_string(i) + " = " +
            std::to_string(b) + " is outside [0, " + std::to_string(numBlocks) +
            ")");
      hot[size_t(b)] = 1;
    }
  }

  auto bind = [&] {
    for (size_t c = 0; c < caches.size(); ++c) {
      cpu::KVCacheView &v = *caches[c];
      v.residentIndex = residentIndex.data();
      v.kResidual = kPools[c].data();
      v.vResidual = vPools[c].data();
      v.residualEntries = numEntries;
    }
  };
  bind();
  // Quantize what left every window; its entry is free again.
  std::vector<int64_t> keep;
  for (int64_t b : residentBlocks) {
    if (hot[size_t(b)]) {
      keep.push_back(b);
      continue;
    }
    if (filled[size_t(b)] > 0)
      for (cpu::KVCacheView *v : caches)
        if (cpu::Status s = cpu::kiviQuantizeBlock(*v, b, filled[size_t(b)]);
            !s.ok())
          return Status::internal("int2 KV cache: " + s.message());
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
    if (residentIndex[size_t(b)] < 0) {
      int32_t e = allocateEntry(caches);
      bind();
      residentIndex[size_t(b)] = e;
      residentBlocks.push_back(b);
      if (first > 0)
        for (cpu::KVCacheView *v : caches)
          if (cpu::Status s = cpu::kiviDequantizeBlock(*v, b, first, e);
              !s.ok())
            return Status::internal("int2 KV cache: " + s.message());
      filled[size_t(b)] = first;
    } else if (first == 0) {
      filled[size_t(b)] = 0;
    }
    filled[size_t(b)] = std::max(filled[size_t(b)], lastOff[size_t(b)] + 1);
  }
  bind();
  return Status::ok();
}

} // namespace folio::exec
