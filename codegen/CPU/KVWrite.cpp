//===- KVWrite.cpp - Store K/V rows into the paged cache ------------------===//

#include "codegen/CPU/Convert.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <vector>

namespace folio::cpu {

using namespace detail;

Status validateKVCache(const KVCacheView &c) {
  const char *kernel = "kvCache";
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numBlocks", c.numBlocks));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "blockSize", c.blockSize));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "numKvHeads", c.numKvHeads));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "headDim", c.headDim));
  if (c.numBlocks > 0 && (!c.k || !c.v))
    return Status::error("kvCache: K or V pool is null");
  return Status::success();
}

Status kvWrite(const KVCacheView &cache, const float *k, int64_t kStride,
               const float *v, int64_t vStride, const int64_t *slotMapping,
               int64_t numTokens, ThreadPool &pool) {
  const char *kernel = "kvWrite";
  FOLIO_RETURN_IF_ERROR(validateKVCache(cache));
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numTokens", numTokens));
  int64_t row = cache.slotElements();
  if (numTokens > 0 && (kStride < row || vStride < row))
    return Status::error("kvWrite: row strides must be >= numKvHeads*headDim");
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "k", k, numTokens));
  FOLIO_RETURN_IF_ERROR(checkPointer(kernel, "v", v, numTokens));
  FOLIO_RETURN_IF_ERROR(
      checkPointer(kernel, "slotMapping", slotMapping, numTokens));
  int64_t numSlots = cache.numBlocks * cache.blockSize;
  std::vector<int64_t> used;
  used.reserve(size_t(numTokens));
  for (int64_t t = 0; t < numTokens; ++t) {
    int64_t s = slotMapping[t];
    if (s == -1)
      continue;
    if (s < 0 || s >= numSlots)
      return Status::error("kvWrite: slot " + std::to_string(s) + " of token " +
                           std::to_string(t) + " is outside [0, " +
                           std::to_string(numSlots) +
                           ") (use -1 to skip a token)");
    used.push_back(s);
  }
  // Duplicate slots would make the result depend on thread timing.
  std::sort(used.begin(), used.end());
  if (std::adjacent_find(used.begin(), used.end()) != used.end())
    return Status::error("kvWrite: two tokens map to the same slot");

  size_t slotBytes = size_t(row) * dtypeSize(cache.dtype);
  char *kBase = static_cast<char *>(cache.k);
  char *vBase = static_cast<char *>(cache.v);
  pool.parallelFor(numTokens, rowGrain(2 * row, 8192),
                   [&](int64_t b, int64_t e) {
                     for (int64_t t = b; t < e; ++t) {
                       int64_t s = slotMapping[t];
                       if (s < 0)
                         continue;
                       storeRow(k + t * kStride, kBase + size_t(s) * slotBytes,
                                cache.dtype, row);
                       storeRow(v + t * vStride, vBase + size_t(s) * slotBytes,
                                cache.dtype, row);
                     }
                   });
  return Status::success();
}

} // namespace folio::cpu
