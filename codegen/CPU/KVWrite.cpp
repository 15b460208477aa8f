//===- KVWrite.cpp - Store K/V rows into the paged cache ------------------===//

#include "codegen/CPU/Convert.h"
#include "codegen/CPU/KVCache.h"
#include "codegen/CPU/KVQuant.h"
#include "codegen/CPU/KVRowLoad.h"
#include "codegen/CPU/Validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace folio::cpu {

using namespace detail;

size_t kvBytesPerToken(DType dtype, int64_t numKvHeads, int64_t headDim,
                       int64_t group, int64_t blockSize) {
  if (isKivi(dtype)) {
    if (blockSize <= 0 || group <= 0)
      return 0;
    size_t kParamsPerBlock = size_t(numKvHeads * headDim) * 4;
    return 2 * size_t(numKvHeads * headDim / 4) +
           (kParamsPerBlock + size_t(blockSize) - 1) / size_t(blockSize) +
           size_t(numKvHeads * (headDim / group)) * 4;
  }
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
  if (uint8_t(c.dtype) > uint8_t(DType::I2))
    return cacheError("dtype " + std::to_string(int(c.dtype)) +
                      " is not a cache type");
  if (c.numBlocks > 0 && (!c.k || !c.v))
    return cacheError(!c.k ? "k (the K pool) is null"
                           : "v (the V pool) is null");
  const std::string type = dtypeName(c.dtype);
  if (isKivi(c.dtype)) {
    if (c.headDim % 4 != 0)
      return cacheError("headDim " + std::to_string(c.headDim) +
                        " must be a multiple of 4 for int2 caches");
    if (c.group <= 0 || c.headDim % c.group != 0)
      return cacheError("group " + std::to_string(c.group) + " must be > 0 " +
                        "and divide headDim " + std::to_string(c.headDim) +
                        " for int2 caches");
    if (c.numBlocks > 0 && (!c.kParams || !c.vParams))
      return cacheError(std::string(!c.kParams ? "kParams" : "vParams") +
                        " is null (int2 caches keep (scale, min) pairs)");
    if (c.numBlocks > 0 && !c.residentIndex)
      return cacheError("residentIndex is null (int2 caches need it)");
    if (c.residualEntries < 0)
      return cacheError("residualEntries " + std::to_string(c.residualEntries) +
                        " is negative");
    if (c.residualEntries > 0 && (!c.kResidual || !c.vResidual))
      return cacheError(std::string(!c.kResidual ? "kResidual" : "vResidual") +
                        " is null but residualEntries = " +
                        std::to_string(c.residualEntries));
    if (c.residual < 0 || c.residual % c.blockSize != 0)
      return cacheError("residual " + std::to_string(c.residual) +
                        " must be a non-negative multiple of blockSize " +
                        std::to_string(c.blockSize));
  } else if (hasGroupParams(c.dtype)) {
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
  if (isKivi(cache.dtype))
    for (int64_t s : used) {
      int64_t block = s / cache.blockSize;
      int64_t e = cache.residentIndex[block];
      if (e < 0 || e >= cache.residualEntries)
        return Status::error(
            "kvWrite: slot " + std::to_string(s) + " is in block " +
            std::to_string(block) +
            (e < 0 ? ", which is not resident (int2 caches take writes only "
                     "into resident blocks)"
                   : " whose residual entry " + std::to_string(e) +
                         " is outside [0, " +
                         std::to_string(cache.residualEntries) + ")"));
    }

  const size_t slotBytes = cache.slotBytes(), headBytes = cache.headRowBytes();
  const size_t paramSlot = cache.paramSlotBytes() / 2; // in uint16
  const int64_t paramHead =
      kvRowParams(cache.dtype, cache.headDim, cache.group);
  char *kBase = static_cast<char *>(cache.k);
  char *vBase = static_cast<char *>(cache.v);
  uint16_t *kpBase = static_cast<uint16_t *>(cache.kParams);
  uint16_t *vpBase = static_cast<uint16_t *>(cache.vParams);
  const bool plain = isPlainFloat(cache.dtype);
  if (isKivi(cache.dtype)) {
    pool.parallelFor(
        numTokens, rowGrain(2 * row, 8192), [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) {
            int64_t s = slotMapping[t];
            if (s < 0)
              continue;
            size_t r =
                size_t(int64_t(cache.residentIndex[s / cache.blockSize]) *
                           cache.blockSize +
                       s % cache.blockSize) *
                size_t(row);
            std::memcpy(cache.kResidual + r, k + t * kStride,
                        size_t(row) * sizeof(float));
            std::memcpy(cache.vResidual + r, v + t * vStride,
                        size_t(row) * sizeof(float));
          }
        });
    return Status::success();
  }
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

namespace {

Status kiviBlockChecks(const char *kernel, const KVCacheView &c, int64_t block,
                       int64_t filled) {
  FOLIO_RETURN_IF_ERROR(validateKVCache(c));
  std::string k = kernel;
  if (!isKivi(c.dtype))
    return Status::error(k + ": the cache is " + dtypeName(c.dtype) +
                         ", not int2");
  if (block < 0 || block >= c.numBlocks)
    return Status::error(k + ": block " + std::to_string(block) +
                         " is outside [0, " + std::to_string(c.numBlocks) +
                         ")");
  if (filled < 1 || filled > c.blockSize)
    return Status::error(k + ": filled " + std::to_string(filled) +
                         " is outside [1, " + std::to_string(c.blockSize) +
                         "]");
  return Status::success();
}

Status checkEntry(const char *kernel, const KVCacheView &c, int64_t block,
                  int64_t entry) {
  if (entry < 0 || entry >= c.residualEntries)
    return Status::error(std::string(kernel) + ": residual entry " +
                         std::to_string(entry) + " of block " +
                         std::to_string(block) + " is outside [0, " +
                         std::to_string(c.residualEntries) + ")");
  return Status::success();
}

} // namespace

Status kiviQuantizeBlock(const KVCacheView &c, int64_t block, int64_t filled) {
  const char *kernel = "kiviQuantizeBlock";
  FOLIO_RETURN_IF_ERROR(kiviBlockChecks(kernel, c, block, filled));
  int64_t entry = c.residentIndex[block];
  if (entry < 0)
    return Status::error(std::string(kernel) + ": block " +
                         std::to_string(block) + " is not resident");
  FOLIO_RETURN_IF_ERROR(checkEntry(kernel, c, block, entry));
  const int64_t H = c.numKvHeads, hd = c.headDim, bs = c.blockSize;
  const size_t headBytes = c.headRowBytes(), slotBytes = c.slotBytes();
  const int64_t vParamHead = kvRowParams(c.dtype, hd, c.group);
  const float *kRes = c.kResidual + size_t(entry * bs * H * hd);
  const float *vRes = c.vResidual + size_t(entry * bs * H * hd);
  char *kData = static_cast<char *>(c.k) + size_t(block * bs) * slotBytes;
  char *vData = static_cast<char *>(c.v) + size_t(block * bs) * slotBytes;
  uint16_t *kPar =
      static_cast<uint16_t *>(c.kParams) + size_t(block * H * hd * 2);
  uint16_t *vPar =
      static_cast<uint16_t *>(c.vParams) + size_t(block * bs * H * vParamHead);
  // Unfilled slots: code 0.
  std::memset(kData + size_t(filled) * slotBytes, 0,
              size_t(bs - filled) * slotBytes);
  std::memset(vData + size_t(filled) * slotBytes, 0,
              size_t(bs - filled) * slotBytes);
  std::vector<float> rows(size_t(filled * hd));
  std::vector<uint8_t> codes(size_t(filled) * headBytes);
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t r = 0; r < filled; ++r)
      std::memcpy(rows.data() + r * hd, kRes + (r * H + h) * hd,
                  size_t(hd) * sizeof(float));
    kiviQuantizeKeys(rows.data(), filled, hd, codes.data(), kPar + h * hd * 2);
    for (int64_t r = 0; r < filled; ++r)
      std::memcpy(kData + size_t(r) * slotBytes + size_t(h) * headBytes,
                  codes.data() + size_t(r) * headBytes, headBytes);
    for (int64_t r = 0; r < filled; ++r)
      quantizeKvRow(vRes + (r * H + h) * hd, hd, c.dtype, c.group, 1.0f,
                    vData + size_t(r) * slotBytes + size_t(h) * headBytes,
                    vPar + (r * H + h) * vParamHead);
  }
  return Status::success();
}

Status kiviDequantizeBlock(const KVCacheView &c, int64_t block, int64_t filled,
                           int64_t entry) {
  const char *kernel = "kiviDequantizeBlock";
  FOLIO_RETURN_IF_ERROR(kiviBlockChecks(kernel, c, block, filled));
  FOLIO_RETURN_IF_ERROR(checkEntry(kernel, c, block, entry));
  const int64_t H = c.numKvHeads, hd = c.headDim, bs = c.blockSize;
  const size_t headBytes = c.headRowBytes(), slotBytes = c.slotBytes();
  const int64_t vParamHead = kvRowParams(c.dtype, hd, c.group);
  float *kRes = c.kResidual + size_t(entry * bs * H * hd);
  float *vRes = c.vResidual + size_t(entry * bs * H * hd);
  const char *kData =
      static_cast<const char *>(c.k) + size_t(block * bs) * slotBytes;
  const char *vData =
      static_cast<const char *>(c.v) + size_t(block * bs) * slotBytes;
  const uint16_t *kPar =
      static_cast<const uint16_t *>(c.kParams) + size_t(block * H * hd * 2);
  const uint16_t *vPar = static_cast<const uint16_t *>(c.vParams) +
                         size_t(block * bs * H * vParamHead);
  for (int64_t r = 0; r < filled; ++r)
    for (int64_t h = 0; h < H; ++h) {
      size_t off = size_t(r) * slotBytes + size_t(h) * headBytes;
      kiviDequantizeKey(reinterpret_cast<const uint8_t *>(kData + off),
                        kPar + h * hd * 2, hd, kRes + (r * H + h) * hd);
      dequantizeKvRow(vData + off, vPar + (r * H + h) * vParamHead, hd, c.dtype,
                      c.group, 1.0f, vRes + (r * H + h) * hd);
    }
  return Status::success();
}

} // namespace folio::cpu
