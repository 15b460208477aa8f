//===- KVWrite.cpp - Store K/V rows into the paged cache ------------------===//

#include "codegen/CPU/Convert.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/KVRowLoad.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace folio::cpu {

using namespace detail;

size_t kvBytesPerToken(DType dtype, int64_t numKvHeads, int64_t headDim,
                       int64_t group) {
  KVCacheView c;
  c.dtype = dtype;
  c.numKvHeads = numKvHeads;
  c.headDim = headDim;
  c.group = group;
  return 2 * (c.slotBytes() + c.paramSlotBytes());
}

namespace {

Status cacheError(const std::string &what) {
  return Status::error("kvCache: " + what);
}

Status checkScales(const KVCacheView &c, const char *name, const float *s) {
  if (!s)
    return cacheError(std::string(name) + " is null (" + dtypeName(c.dtype) +
                      " caches need a static scale per kv head)");
  for (int64_t h = 0; h < c.numKvHeads; ++h)
    if (!(s[h] > 0.0f) || std::isinf(s[h]))
      return cacheError(std::string(name) + "[" + std::to_string(h) + "] = " +
                        std::to_string(s[h]) + " must be positive and finite");
  return Status::success();
}

} // namespace

Status validateKVCache(const KVCacheView &c) {
  const char *kernel = "kvCache";
  FOLIO_RETURN_IF_ERROR(checkNonNegative(kernel, "numBlocks", c.numBlocks));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "blockSize", c.blockSize));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "numKvHeads", c.numKvHeads));
  FOLIO_RETURN_IF_ERROR(checkPositive(kernel, "headDim", c.headDim));
  if (uint8_t(c.dtype) > uint8_t(DType::I4))
    return cacheError("dtype " + std::to_string(int(c.dtype)) +
                      " is not a cache type");
  if (c.numBlocks > 0 && (!c.k || !c.v))
    return cacheError(!c.k ? "k (the K pool) is null"
                           : "v (the V pool) is null");
  const std::string type = dtypeName(c.dtype);
  if (hasGroupParams(c.dtype)) {
    if (c.group <= 0 || c.headDim % c.group != 0)
      return cacheError("group " + std::to_string(c.group) + " must be > 0 " +
                        "and divide headDim " + std::to_string(c.headDim) +
                        " for " + type + " caches");
    if (c.dtype == DType::I4 && c.group % 2 != 0)
      return cacheError("group " + std::to_string(c.group) +
                        " must be even for int4 caches");
    if (c.numBlocks > 0 && (!c.kParams || !c.vParams))
      return cacheError(std::string(!c.kParams ? "kParams" : "vParams") +
                        " is null (" + type +
                        " caches keep (scale, min) pairs per group)");
  } else {
    if (c.group != 0)
      return cacheError("group must be 0 for " + type + " caches, got " +
                        std::to_string(c.group));
    if (c.kParams || c.vParams)
      return cacheError(std::string(c.kParams ? "kParams" : "vParams") +
                        " must be null for " + type + " caches");
  }
  if (isFp8(c.dtype)) {
    FOLIO_RETURN_IF_ERROR(checkScales(c, "kScale", c.kScale));
    FOLIO_RETURN_IF_ERROR(checkScales(c, "vScale", c.vScale));
  } else if (c.kScale || c.vScale) {
    return cacheError(std::string(c.kScale ? "kScale" : "vScale") +
                      " must be null for " + type +
                      " caches (static scales are for fp8)");
  }
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

  const size_t slotBytes = cache.slotBytes(), headBytes = cache.headRowBytes();
  const size_t paramSlot = cache.paramSlotBytes() / 2; // in uint16
  const int64_t paramHead =
      kvRowParams(cache.dtype, cache.headDim, cache.group);
  char *kBase = static_cast<char *>(cache.k);
  char *vBase = static_cast<char *>(cache.v);
  uint16_t *kpBase = static_cast<uint16_t *>(cache.kParams);
  uint16_t *vpBase = static_cast<uint16_t *>(cache.vParams);
  const bool plain = isPlainFloat(cache.dtype);
  pool.parallelFor(
      numTokens, rowGrain(2 * row, 8192), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          int64_t s = slotMapping[t];
          if (s < 0)
            continue;
          char *kDst = kBase + size_t(s) * slotBytes;
          char *vDst = vBase + size_t(s) * slotBytes;
          if (plain) { // the whole slot at once
            storeRow(k + t * kStride, kDst, cache.dtype, row);
            storeRow(v + t * vStride, vDst, cache.dtype, row);
            continue;
          }
          for (int64_t h = 0; h < cache.numKvHeads; ++h) {
            KvRowFormat f{cache.dtype, cache.headDim, cache.group, 1.0f};
            size_t p = size_t(s) * paramSlot + size_t(h * paramHead);
            f.scale = cache.kScale ? cache.kScale[h] : 1.0f;
            storeKvRow(f, k + t * kStride + h * cache.headDim,
                       kDst + size_t(h) * headBytes,
                       kpBase ? kpBase + p : nullptr);
            f.scale = cache.vScale ? cache.vScale[h] : 1.0f;
            storeKvRow(f, v + t * vStride + h * cache.headDim,
                       vDst + size_t(h) * headBytes,
                       vpBase ? vpBase + p : nullptr);
          }
        }
      });
  return Status::success();
}

} // namespace folio::cpu
