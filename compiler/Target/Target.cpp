//===- Target.cpp - Compilation targets and KV-cache dtypes ---------------===//

#include "compiler/Target/Target.h"

#include <array>
#include <cassert>
#include <utility>

namespace folio {
namespace {

constexpr std::array<std::pair<Target, std::string_view>, 5> kTargets = {{
    {Target::CPU, "cpu"},
    {Target::SM80, "sm_80"},
    {Target::SM86, "sm_86"},
    {Target::SM89, "sm_89"},
    {Target::SM90a, "sm_90a"},
}};

constexpr std::array<std::pair<KVCacheDType, std::string_view>, 9> kDTypes = {{
    {KVCacheDType::Auto, "auto"},
    {KVCacheDType::F32, "f32"},
    {KVCacheDType::F16, "f16"},
    {KVCacheDType::BF16, "bf16"},
    {KVCacheDType::FP8E4M3, "fp8_e4m3"},
    {KVCacheDType::FP8E5M2, "fp8_e5m2"},
    {KVCacheDType::Int8, "int8"},
    {KVCacheDType::Int4, "int4"},
    {KVCacheDType::Int2, "int2"},
}};

template <typename Table, typename Enum>
std::optional<Enum> lookupByName(const Table &table, std::string_view name) {
  for (const auto &[value, spelling] : table)
    if (spelling == name)
      return value;
  return std::nullopt;
}

template <typename Table, typename Enum>
std::string_view lookupName(const Table &table, Enum value) {
  for (const auto &[candidate, spelling] : table)
    if (candidate == value)
      return spelling;
  assert(false && "enum value missing from its name table");
  return "<invalid>";
}

template <typename Table> std::string joinNames(const Table &table) {
  std::string out;
  for (const auto &entry : table) {
    if (!out.empty())
      out += ", ";
    out += entry.second;
  }
  return out;
}

} // namespace

std::optional<Target> parseTarget(std::string_view name) {
  return lookupByName<decltype(kTargets), Target>(kTargets, name);
}
std::string_view targetName(Target target) {
  return lookupName(kTargets, target);
}
std::string supportedTargets() { return joinNames(kTargets); }

bool hasHardwareFP8(Target target) {
  return target == Target::SM89 || target == Target::SM90a;
}

std::optional<KVCacheDType> parseKVCacheDType(std::string_view name) {
  return lookupByName<decltype(kDTypes), KVCacheDType>(kDTypes, name);
}
std::string_view kvCacheDTypeName(KVCacheDType dtype) {
  return lookupName(kDTypes, dtype);
}
std::string supportedKVCacheDTypes() { return joinNames(kDTypes); }

KVCacheDType resolveKVCacheDType(Target target, KVCacheDType requested) {
  if (requested != KVCacheDType::Auto)
    return requested;
  return hasHardwareFP8(target) ? KVCacheDType::FP8E4M3 : KVCacheDType::Int8;
}

unsigned kvCacheDTypeBits(KVCacheDType dtype) {
  switch (dtype) {
  case KVCacheDType::F32:
    return 32;
  case KVCacheDType::F16:
  case KVCacheDType::BF16:
    return 16;
  case KVCacheDType::FP8E4M3:
  case KVCacheDType::FP8E5M2:
  case KVCacheDType::Int8:
    return 8;
  case KVCacheDType::Int4:
    return 4;
  case KVCacheDType::Int2:
    return 2;
  case KVCacheDType::Auto:
    break;
  }
  assert(false && "resolve 'auto' before asking for its width");
  return 0;
}

int64_t resolveBlockSize(KVCacheDType resolved, int64_t requested) {
  if (requested != 0)
    return requested;
  return resolved == KVCacheDType::Int2 ? 32 : 16;
}

bool isWeightDtypeName(std::string_view name) {
  for (std::string_view n : {"f32", "bf16", "f16", "int8", "fp8_e4m3", "int4"})
    if (name == n)
      return true;
  return false;
}

bool isValidBlockSize(int64_t blockSize) {
  return blockSize >= 1 && blockSize <= 256 &&
         (blockSize & (blockSize - 1)) == 0;
}

} // namespace folio
