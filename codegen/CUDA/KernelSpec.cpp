//===- KernelSpec.cpp - Specialization parameters of CUDA kernels ---------===//

#include "codegen/CUDA/KernelSpec.h"

#include "codegen/CUDA/Templates.h"

#include <cstdio>

namespace folio::cuda {

using cpu::DType;
using cpu::Status;

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89",
                                                 "sm_90a"};
  return archs;
}

bool isSupportedArch(const std::string &arch) {
  for (const std::string &a : supportedArchs())
    if (a == arch)
      return true;
  return false;
}

bool isSupportedCacheType(DType t) { return t != DType::I2; }

std::string supportedCacheTypeList() {
  std::string s;
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::FP8E4M3,
                  DType::FP8E5M2, DType::I8, DType::I4}) {
    s += s.empty() ? "" : ", ";
    s += cpu::dtypeName(t);
  }
  return s;
}

namespace {

/// FNV-1a over every template: a kernel's key changes with its code.
std::string templatesHash() {
  uint64_t h = 1469598103934665603ull;
  for (const char *name : {"Prelude.cuh", "KVWrite.cuh", "PagedDecode.cuh"})
    for (const char *p = embeddedTemplate(name); p && *p; ++p)
      h = (h ^ uint8_t(*p)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

Status checkCommon(const char *what, DType t, int headDim, int numKvHeads,
                   int group) {
  std::string where = std::string(what) + " (cache " + cpu::dtypeName(t) +
                      ", head_dim " + std::to_string(headDim) + ")";
  if (!isSupportedCacheType(t))
    return Status::error(where + ": the " + cpu::dtypeName(t) +
                         " cache is not generated for CUDA; supported: " +
                         supportedCacheTypeList());
  if (headDim < 1 || headDim > 512)
    return Status::error(where + ": head_dim must be in [1, 512]");
  if (numKvHeads < 1)
    return Status::error(where + ": num_kv_heads " +
                         std::to_string(numKvHeads) + " must be >= 1");
  if (cpu::hasGroupParams(t)) {
    if (group < 1 || headDim % group != 0 || (t == DType::I4 && group % 2 != 0))
      return Status::error(
          where + ": group " + std::to_string(group) + " must divide head_dim" +
          (t == DType::I4 ? std::string(" and be even") : std::string()));
  } else if (group != 0) {
    return Status::error(where + ": group " + std::to_string(group) +
                         " is only used by int8 and int4 caches; use 0");
  }
  return Status::success();
}

std::string typeTag(DType t, int group) {
  std::string s = cpu::dtypeName(t);
  if (cpu::hasGroupParams(t))
    s += "_g" + std::to_string(group);
  return s;
}

} // namespace

Status validate(const KVWriteSpec &s) {
  return checkCommon("kv_write", s.cacheType, s.headDim, s.numKvHeads, s.group);
}

Status validate(const PagedDecodeSpec &s) {
  Status st = checkCommon("paged decode attention", s.cacheType, s.headDim,
                          s.numKvHeads, s.group);
  if (!st.ok())
    return st;
  std::string where = "paged decode attention " + kernelName(s);
  if (s.blockSize < 1)
    return Status::error(where + ": block_size must be >= 1");
  if (s.queriesPerKv < 1 || s.queriesPerKv > 16)
    return Status::error(where + ": query heads per kv head " +
                         std::to_string(s.queriesPerKv) +
                         " must be in [1, 16]");
  if (s.threads < 32 || s.threads > 1024 || s.threads % 32 != 0)
    return Status::error(where + ": threads " + std::to_string(s.threads) +
                         " must be a multiple of 32 in [32, 1024]");
  if (s.partition < 1)
    return Status::error(where + ": partition must be >= 1 key");
  size_t bytes = pagedDecodeSharedBytes(s);
  if (bytes > kMaxDefaultSharedBytes)
    return Status::error(where + ": needs " + std::to_string(bytes) +
                         " bytes of shared memory, more than the " +
                         std::to_string(kMaxDefaultSharedBytes) +
                         " a launch gets by default; use a smaller partition");
  return Status::success();
}

std::string kernelName(const KVWriteSpec &s) {
  return "folio_kv_write_" + typeTag(s.cacheType, s.group) + "_d" +
         std::to_string(s.headDim) + "_kv" + std::to_string(s.numKvHeads);
}

std::string kernelName(const PagedDecodeSpec &s) {
  return "folio_paged_decode_" + typeTag(s.cacheType, s.group) + "_d" +
         std::to_string(s.headDim) + "_b" + std::to_string(s.blockSize) +
         "_kv" + std::to_string(s.numKvHeads) + "_q" +
         std::to_string(s.queriesPerKv) + "_p" + std::to_string(s.partition) +
         "_t" + std::to_string(s.threads);
}

std::string combineKernelName(const PagedDecodeSpec &s) {
  return "folio_paged_decode_combine_d" + std::to_string(s.headDim) + "_t" +
         std::to_string(s.threads);
}

std::string canonicalKey(const KVWriteSpec &s) {
  return "kv_write:cache=" + std::string(cpu::dtypeName(s.cacheType)) +
         ";head_dim=" + std::to_string(s.headDim) +
         ";kv_heads=" + std::to_string(s.numKvHeads) +
         ";group=" + std::to_string(s.group) + ";templates=" + templatesHash();
}

std::string canonicalKey(const PagedDecodeSpec &s) {
  return "paged_decode:cache=" + std::string(cpu::dtypeName(s.cacheType)) +
         ";head_dim=" + std::to_string(s.headDim) +
         ";block_size=" + std::to_string(s.blockSize) +
         ";kv_heads=" + std::to_string(s.numKvHeads) +
         ";q_per_kv=" + std::to_string(s.queriesPerKv) +
         ";group=" + std::to_string(s.group) +
         ";partition=" + std::to_string(s.partition) +
         ";threads=" + std::to_string(s.threads) +
         ";templates=" + templatesHash();
}

LaunchGeometry kvWriteLaunch(const KVWriteSpec &s, int64_t numTokens) {
  LaunchGeometry g;
  g.grid[0] = unsigned(numTokens);
  g.grid[1] = unsigned(s.numKvHeads);
  g.block[0] = 32;
  return g;
}

size_t pagedDecodeSharedBytes(const PagedDecodeSpec &s) {
  // q [G][D] and scores [G][P] in f32, slots [P] in int32.
  return size_t(s.queriesPerKv) * (size_t(s.headDim) + size_t(s.partition)) *
             4 +
         size_t(s.partition) * 4;
}

PagedDecodeLaunch pagedDecodeLaunch(const PagedDecodeSpec &s, int64_t numTokens,
                                    int64_t maxContext) {
  PagedDecodeLaunch l;
  l.numPartitions = maxContext <= s.partition
                        ? 1
                        : int((maxContext + s.partition - 1) / s.partition);
  int64_t heads = int64_t(s.numKvHeads) * s.queriesPerKv;
  l.main.grid[0] = unsigned(s.numKvHeads);
  l.main.grid[1] = unsigned(numTokens);
  l.main.grid[2] = unsigned(l.numPartitions);
  l.main.block[0] = unsigned(s.threads);
  l.main.dynamicShared = pagedDecodeSharedBytes(s);
  l.combine.grid[0] = unsigned(heads);
  l.combine.grid[1] = unsigned(numTokens);
  l.combine.block[0] = unsigned(s.threads);
  if (l.numPartitions > 1) {
    l.statFloats = size_t(numTokens * heads * l.numPartitions);
    l.partialFloats = l.statFloats * size_t(s.headDim);
  }
  return l;
}

} // namespace folio::cuda
