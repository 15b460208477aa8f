//===- Plan.cpp - Plan data helpers ---------------------------------------===//

#include "runtime/Plan/Plan.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

namespace folio::plan {

const char *elemTypeName(ElemType t) {
  switch (t) {
  case ElemType::F32:
    return "f32";
  case ElemType::F16:
    return "f16";
  case ElemType::BF16:
    return "bf16";
  case ElemType::I64:
    return "i64";
  case ElemType::I32:
    return "i32";
  case ElemType::F8E4M3:
    return "fp8_e4m3";
  case ElemType::F8E5M2:
    return "fp8_e5m2";
  case ElemType::I8:
    return "int8";
  case ElemType::I4:
    return "int4";
  case ElemType::I2:
    return "int2";
  }
  return "?";
}

size_t elemTypeSize(ElemType t) {
  switch (t) {
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  case ElemType::F16:
  case ElemType::BF16:
    return 2;
  case ElemType::I64:
    return 8;
  case ElemType::F8E4M3:
  case ElemType::F8E5M2:
  case ElemType::I8:
    return 1;
  case ElemType::I4:
  case ElemType::I2:
    return 0;
  }
  return 0;
}

size_t elemTypeBits(ElemType t) {
  if (t == ElemType::I4)
    return 4;
  if (t == ElemType::I2)
    return 2;
  return 8 * elemTypeSize(t);
}

bool isTensorElemType(ElemType t) {
  switch (t) {
  case ElemType::F32:
  case ElemType::F16:
  case ElemType::BF16:
  case ElemType::I64:
  case ElemType::I32:
    return true;
  case ElemType::F8E4M3:
  case ElemType::F8E5M2:
  case ElemType::I8:
  case ElemType::I4:
  case ElemType::I2:
    return false;
  }
  return false;
}

const char *kvScaleName(ValueInfo::KVScale s) {
  switch (s) {
  case ValueInfo::KVScale::None:
    return "none";
  case ValueInfo::KVScale::PerTensor:
    return "per_tensor";
  case ValueInfo::KVScale::PerHead:
    return "per_head";
  case ValueInfo::KVScale::PerTokenHead:
    return "per_token_head";
  case ValueInfo::KVScale::Kivi:
    return "kivi";
  case ValueInfo::KVScale::PerTokenGroup:
    return "per_token_group";
  }
  return "?";
}

const char *dimSymbolName(DimSymbol s) {
  switch (s) {
  case DimSymbol::None:
    return "none";
  case DimSymbol::Tokens:
    return "tokens";
  case DimSymbol::Rows:
    return "rows";
  case DimSymbol::Seqs:
    return "seqs";
  }
  return "?";
}

const std::vector<std::string> &opKinds() {
  static const std::vector<std::string> kinds = {
      "embedding", "linear",     "gated_mlp",       "rms_norm",    "layer_norm",
      "rotary",    "kv_write",   "paged_attention", "gather_rows", "binary",
      "unary",     "cast",       "reshape",         "transpose",   "slice",
      "concat",    "spec_verify"};
  return kinds;
}

const std::vector<std::string> &fusedKernelKinds() {
  static const std::vector<std::string> kinds = {
      "add_rms_norm",    "add_layer_norm", "rotary_kv_write",
      "linear_epilogue", "elementwise",    "gather_rows_linear"};
  return kinds;
}

bool isOpKind(const std::string &kind) {
  for (const std::string &k : opKinds())
    if (k == kind)
      return true;
  return false;
}

bool isKernelKind(const std::string &kind) {
  if (isOpKind(kind))
    return true;
  for (const std::string &k : fusedKernelKinds())
    if (k == kind)
      return true;
  return false;
}

int64_t bufferBytes(const ValueInfo &v, int64_t tokens, int64_t rows,
                    int64_t seqs) {
  if (v.kind != ValueInfo::Kind::Tensor || !isTensorElemType(v.type))
    return -1;
  int64_t n = int64_t(elemTypeSize(v.type));
  for (int64_t d : v.dims) {
    if (d >= 0) {
      n *= d;
      continue;
    }
    switch (v.symbol) {
    case DimSymbol::Tokens:
      n *= tokens;
      break;
    case DimSymbol::Rows:
      n *= rows;
      break;
    case DimSymbol::Seqs:
      n *= seqs;
      break;
    case DimSymbol::None:
      return -1;
    }
  }
  return n;
}

std::vector<std::pair<int32_t, int32_t>> linearWeightGroups(const Step &s) {
  if (s.kind == "linear")
    return {{1, 1}};
  if (s.kind == "gated_mlp")
    return {{1, 2}, {3, 1}};
  return {};
}

const Attr *Step::find(const std::string &attrName) const {
  for (const Attr &a : attrs)
    if (a.name == attrName)
      return &a;
  return nullptr;
}

int64_t Step::getInt(const std::string &attrName, int64_t dflt) const {
  const Attr *a = find(attrName);
  if (a && std::holds_alternative<int64_t>(a->value))
    return std::get<int64_t>(a->value);
  return dflt;
}

double Step::getFloat(const std::string &attrName, double dflt) const {
  const Attr *a = find(attrName);
  if (!a)
    return dflt;
  if (std::holds_alternative<double>(a->value))
    return std::get<double>(a->value);
  if (std::holds_alternative<int64_t>(a->value))
    return double(std::get<int64_t>(a->value));
  return dflt;
}

std::string Step::getString(const std::string &attrName,
                            const std::string &dflt) const {
  const Attr *a = find(attrName);
  if (a && std::holds_alternative<std::string>(a->value))
    return std::get<std::string>(a->value);
  return dflt;
}

std::vector<int64_t> Step::getInts(const std::string &attrName) const {
  const Attr *a = find(attrName);
  if (a && std::holds_alternative<std::vector<int64_t>>(a->value))
    return std::get<std::vector<int64_t>>(a->value);
  if (a && std::holds_alternative<int64_t>(a->value))
    return {std::get<int64_t>(a->value)};
  return {};
}

uint64_t Blob::append(const void *data, uint64_t n) {
  uint64_t offset =
      (length + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  uint64_t needed = offset + n;
  if (needed > capacity || !owner) {
    uint64_t newCap = std::max<uint64_t>(needed, capacity * 2);
    newCap = (newCap + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
    if (newCap == 0)
      newCap = kBlobAlignment;
    void *mem = std::aligned_alloc(kBlobAlignment, newCap);
    if (!mem)
      throw std::bad_alloc();
    std::memset(mem, 0, newCap);
    if (base && length)
      std::memcpy(mem, base, length);
    owner = std::shared_ptr<void>(mem, [](void *p) { std::free(p); });
    base = static_cast<const uint8_t *>(mem);
    capacity = newCap;
  }
  if (n)
    std::memcpy(const_cast<uint8_t *>(base) + offset, data, n);
  length = needed;
  return offset;
}

void Blob::adopt(const uint8_t *data, uint64_t size,
                 std::shared_ptr<void> keepAlive) {
  owner = std::move(keepAlive);
  base = data;
  length = size;
  capacity = 0; // read-only: a later append copies
}

int64_t Plan::configValue(const std::string &key, int64_t dflt) const {
  for (const auto &kv : config)
    if (kv.first == key)
      return kv.second;
  return dflt;
}

const Entry *Plan::findEntry(const std::string &name) const {
  for (const Entry &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

const StoredWeight *Plan::findStoredWeight(int32_t step,
                                           int32_t operand) const {
  for (const StoredWeight &w : weights)
    if (w.step == step && w.operand == operand)
      return &w;
  return nullptr;
}

int64_t Plan::storedWeightBytes() const {
  std::set<uint64_t> seen;
  int64_t bytes = 0;
  for (const StoredWeight &w : weights)
    if (seen.insert(w.dataOffset).second)
      bytes += int64_t(w.dataBytes + w.scalesBytes + w.outlierColsBytes +
                       w.outliersBytes);
  return bytes;
}

const char *weightLayoutName(WeightLayout l) {
  switch (l) {
  case WeightLayout::RowsNK:
    return "rows_nk";
  case WeightLayout::Int4G32:
    return "int4_g32";
  case WeightLayout::Int4G64:
    return "int4_g64";
  case WeightLayout::Int4G128:
    return "int4_g128";
  }
  return "unknown";
}

int64_t int4LayoutGroupSize(WeightLayout l) {
  switch (l) {
  case WeightLayout::Int4G32:
    return 32;
  case WeightLayout::Int4G64:
    return 64;
  case WeightLayout::Int4G128:
    return 128;
  default:
    return 0;
  }
}

int32_t Plan::addValue(ValueInfo info) {
  values.push_back(std::move(info));
  return int32_t(values.size() - 1);
}

} // namespace folio::plan
