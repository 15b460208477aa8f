//===- PlanIO.cpp - Reading and writing .folio artifacts ------------------===//

#include "runtime/Plan/PlanIO.h"
#include "runtime/Plan/PlanMapping.h"
#include "runtime/Plan/VerifyDeviceKernels.h"
#include "runtime/Plan/VerifyEntries.h"
#include "runtime/Plan/VerifyWeights.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace folio::plan {
namespace {

enum AttrTag : uint8_t { TagInt = 0, TagFloat, TagString, TagInts, TagFloats };

constexpr uint64_t kFixedHeader = 64;

class Writer {
public:
  std::string out;
  template <typename T> void pod(T v) {
    out.append(reinterpret_cast<const char *>(&v), sizeof(T));
  }
  void str(const std::string &s) {
    pod<uint32_t>(uint32_t(s.size()));
    out += s;
  }
  template <typename T> void vec(const std::vector<T> &v) {
    pod<uint32_t>(uint32_t(v.size()));
    for (const T &x : v)
      pod<T>(x);
  }
};

/// Bounds-checked reads: the first overrun sets `failed` and everything
/// after returns zeros, so parsing code checks once per record.
class Reader {
public:
  Reader(const uint8_t *p, uint64_t n) : p(p), n(n) {}
  bool failed = false;
  template <typename T> T pod() {
    T v{};
    if (failed || n - pos < sizeof(T)) {
      failed = true;
      return v;
    }
    std::memcpy(&v, p + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string str() {
    uint32_t len = pod<uint32_t>();
    if (failed || n - pos < len) {
      failed = true;
      return {};
    }
    std::string s(reinterpret_cast<const char *>(p + pos), len);
    pos += len;
    return s;
  }
  /// A count of records that each take at least `minBytes`: rejects counts
  /// the remaining bytes cannot hold before anything is allocated.
  uint32_t count(uint64_t minBytes) {
    uint32_t c = pod<uint32_t>();
    if (!failed && uint64_t(c) * minBytes > n - pos)
      failed = true;
    return failed ? 0 : c;
  }
  template <typename T> std::vector<T> vec() {
    uint32_t c = count(sizeof(T));
    std::vector<T> v(c);
    for (uint32_t i = 0; i < c; ++i)
      v[i] = pod<T>();
    return v;
  }

private:
  const uint8_t *p;
  uint64_t n;
  uint64_t pos = 0;
};

void encodeArguments(Writer &w, const std::vector<Argument> &args) {
  w.pod<uint32_t>(uint32_t(args.size()));
  for (const Argument &a : args) {
    w.str(a.name);
    w.pod<int32_t>(a.value);
  }
}

void encodeSteps(Writer &w, const std::vector<Step> &steps) {
  w.pod<uint32_t>(uint32_t(steps.size()));
  for (const Step &s : steps) {
    w.str(s.kind);
    w.str(s.name);
    w.vec<int32_t>(s.operands);
    w.vec<int32_t>(s.results);
    w.pod<uint32_t>(uint32_t(s.attrs.size()));
    for (const Attr &a : s.attrs) {
      w.str(a.name);
      if (auto *i = std::get_if<int64_t>(&a.value)) {
        w.pod<uint8_t>(TagInt);
        w.pod<int64_t>(*i);
      } else if (auto *f = std::get_if<double>(&a.value)) {
        w.pod<uint8_t>(TagFloat);
        w.pod<double>(*f);
      } else if (auto *s2 = std::get_if<std::string>(&a.value)) {
        w.pod<uint8_t>(TagString);
        w.str(*s2);
      } else if (auto *is = std::get_if<std::vector<int64_t>>(&a.value)) {
        w.pod<uint8_t>(TagInts);
        w.vec<int64_t>(*is);
      } else {
        w.pod<uint8_t>(TagFloats);
        w.vec<double>(std::get<std::vector<double>>(a.value));
      }
    }
  }
}

std::string encodeHeader(const Plan &plan) {
  Writer w;
  w.str(plan.entry);
  w.pod<uint32_t>(uint32_t(plan.config.size()));
  for (const auto &kv : plan.config) {
    w.str(kv.first);
    w.pod<int64_t>(kv.second);
  }
  w.pod<uint32_t>(uint32_t(plan.values.size()));
  for (const ValueInfo &v : plan.values) {
    w.pod<uint8_t>(uint8_t(v.kind));
    w.pod<uint8_t>(uint8_t(v.type));
    w.vec<int64_t>(v.dims);
    w.pod<int64_t>(v.kvHeads);
    w.pod<int64_t>(v.headDim);
    w.pod<int64_t>(v.blockSize);
    w.pod<uint8_t>(uint8_t(v.symbol));
    w.pod<int32_t>(v.buffer);
    w.pod<uint8_t>(uint8_t(v.kvScale));
    w.pod<int64_t>(v.kvGroup);
    w.pod<int64_t>(v.kvResidual);
  }
  encodeArguments(w, plan.inputs);
  w.vec<int32_t>(plan.outputs);
  w.pod<uint32_t>(uint32_t(plan.constants.size()));
  for (const Constant &c : plan.constants) {
    w.pod<int32_t>(c.value);
    w.pod<uint64_t>(c.offset);
    w.pod<uint64_t>(c.bytes);
  }
  encodeSteps(w, plan.steps);
  w.pod<uint32_t>(uint32_t(plan.kernels.size()));
  for (const Kernel &k : plan.kernels) {
    w.str(k.kind);
    w.pod<int32_t>(k.firstStep);
    w.pod<int32_t>(k.numSteps);
    w.vec<int32_t>(k.inputs);
    w.vec<int32_t>(k.outputs);
    w.vec<int32_t>(k.releases);
  }
  w.pod<uint32_t>(uint32_t(plan.buffers.size()));
  for (const BufferInfo &b : plan.buffers) {
    w.pod<int64_t>(b.staticBytes);
    w.pod<uint8_t>(uint8_t(b.symbol));
  }
  w.pod<uint32_t>(uint32_t(plan.entries.size()));
  for (const Entry &e : plan.entries) {
    w.str(e.name);
    encodeArguments(w, e.inputs);
    w.vec<int32_t>(e.outputs);
    encodeSteps(w, e.steps);
  }
  w.pod<uint32_t>(uint32_t(plan.weights.size()));
  for (const StoredWeight &sw : plan.weights) {
    w.pod<int32_t>(sw.step);
    w.pod<int32_t>(sw.operand);
    w.pod<int32_t>(sw.numOperands);
    w.pod<uint8_t>(uint8_t(sw.type));
    w.pod<uint8_t>(uint8_t(sw.layout));
    w.pod<uint8_t>(uint8_t(sw.activations));
    w.pod<int64_t>(sw.n);
    w.pod<int64_t>(sw.k);
    w.pod<int64_t>(sw.numOutliers);
    for (uint64_t f :
         {sw.dataOffset, sw.dataBytes, sw.scalesOffset, sw.scalesBytes,
          sw.outlierColsOffset, sw.outlierColsBytes, sw.outliersOffset,
          sw.outliersBytes})
      w.pod<uint64_t>(f);
  }
  w.pod<uint32_t>(uint32_t(plan.deviceKernels.size()));
  for (const DeviceKernel &k : plan.deviceKernels) {
    w.str(k.name);
    w.str(k.key);
    w.str(k.arch);
    w.vec<int32_t>(k.steps);
    for (uint64_t f : {k.cubinOffset, k.cubinBytes, k.cubinHash, k.ptxOffset,
                       k.ptxBytes, k.ptxHash})
      w.pod<uint64_t>(f);
    for (int32_t f : {k.registers, k.spillStoreBytes, k.spillLoadBytes,
                      k.stackFrameBytes, k.sharedBytes})
      w.pod<int32_t>(f);
  }
  return w.out;
}

void decodeArguments(Reader &r, std::vector<Argument> &args) {
  uint32_t n = r.count(8);
  for (uint32_t i = 0; i < n && !r.failed; ++i) {
    Argument a;
    a.name = r.str();
    a.value = r.pod<int32_t>();
    args.push_back(std::move(a));
  }
}

Status decodeSteps(Reader &r, std::vector<Step> &steps) {
  uint32_t numSteps = r.count(20);
  for (uint32_t i = 0; i < numSteps && !r.failed; ++i) {
    Step s;
    s.kind = r.str();
    s.name = r.str();
    s.operands = r.vec<int32_t>();
    s.results = r.vec<int32_t>();
    uint32_t numAttrs = r.count(5);
    for (uint32_t j = 0; j < numAttrs && !r.failed; ++j) {
      Attr a;
      a.name = r.str();
      switch (r.pod<uint8_t>()) {
      case TagInt:
        a.value = r.pod<int64_t>();
        break;
      case TagFloat:
        a.value = r.pod<double>();
        break;
      case TagString:
        a.value = r.str();
        break;
      case TagInts:
        a.value = r.vec<int64_t>();
        break;
      case TagFloats:
        a.value = r.vec<double>();
        break;
      default:
        return Status::invalidArgument("plan: step '" + s.kind +
                                       "' has an attribute of unknown tag");
      }
      s.attrs.push_back(std::move(a));
    }
    steps.push_back(std::move(s));
  }
  return Status::ok();
}

Status decodeHeader(Reader &r, Plan &plan) {
  plan.entry = r.str();
  uint32_t numConfig = r.count(12);
  for (uint32_t i = 0; i < numConfig && !r.failed; ++i) {
    std::string key = r.str();
    plan.config.emplace_back(key, r.pod<int64_t>());
  }
  uint32_t numValues = r.count(52);
  plan.values.resize(numValues);
  for (ValueInfo &v : plan.values) {
    uint8_t kind = r.pod<uint8_t>();
    uint8_t type = r.pod<uint8_t>();
    if (kind > 1 || type > uint8_t(ElemType::I2))
      return Status::invalidArgument("plan: bad value kind or element type");
    v.kind = ValueInfo::Kind(kind);
    v.type = ElemType(type);
    v.dims = r.vec<int64_t>();
    v.kvHeads = r.pod<int64_t>();
    v.headDim = r.pod<int64_t>();
    v.blockSize = r.pod<int64_t>();
    uint8_t symbol = r.pod<uint8_t>();
    if (symbol > uint8_t(DimSymbol::Seqs))
      return Status::invalidArgument("plan: bad dim symbol");
    v.symbol = DimSymbol(symbol);
    v.buffer = r.pod<int32_t>();
    uint8_t scale = r.pod<uint8_t>();
    if (scale > uint8_t(ValueInfo::KVScale::PerTokenGroup))
      return Status::invalidArgument("plan: bad KV-cache scale layout");
    v.kvScale = ValueInfo::KVScale(scale);
    v.kvGroup = r.pod<int64_t>();
    v.kvResidual = r.pod<int64_t>();
  }
  decodeArguments(r, plan.inputs);
  plan.outputs = r.vec<int32_t>();
  uint32_t numConstants = r.count(20);
  for (uint32_t i = 0; i < numConstants && !r.failed; ++i) {
    Constant c;
    c.value = r.pod<int32_t>();
    c.offset = r.pod<uint64_t>();
    c.bytes = r.pod<uint64_t>();
    plan.constants.push_back(c);
  }
  if (Status st = decodeSteps(r, plan.steps); !st)
    return st;
  uint32_t numKernels = r.count(24);
  for (uint32_t i = 0; i < numKernels && !r.failed; ++i) {
    Kernel k;
    k.kind = r.str();
    k.firstStep = r.pod<int32_t>();
    k.numSteps = r.pod<int32_t>();
    k.inputs = r.vec<int32_t>();
    k.outputs = r.vec<int32_t>();
    k.releases = r.vec<int32_t>();
    plan.kernels.push_back(std::move(k));
  }
  uint32_t numBuffers = r.count(9);
  for (uint32_t i = 0; i < numBuffers && !r.failed; ++i) {
    BufferInfo b;
    b.staticBytes = r.pod<int64_t>();
    uint8_t symbol = r.pod<uint8_t>();
    if (symbol > uint8_t(DimSymbol::Seqs))
      return Status::invalidArgument("plan: bad buffer dim symbol");
    b.symbol = DimSymbol(symbol);
    plan.buffers.push_back(b);
  }
  uint32_t numEntries = r.count(16);
  for (uint32_t i = 0; i < numEntries && !r.failed; ++i) {
    Entry e;
    e.name = r.str();
    decodeArguments(r, e.inputs);
    e.outputs = r.vec<int32_t>();
    if (Status st = decodeSteps(r, e.steps); !st)
      return st;
    plan.entries.push_back(std::move(e));
  }
  uint32_t numWeights = r.count(103);
  for (uint32_t i = 0; i < numWeights && !r.failed; ++i) {
    StoredWeight sw;
    sw.step = r.pod<int32_t>();
    sw.operand = r.pod<int32_t>();
    sw.numOperands = r.pod<int32_t>();
    // Enums are range-checked by validateStoredWeights, which names them.
    sw.type = ElemType(r.pod<uint8_t>());
    sw.layout = WeightLayout(r.pod<uint8_t>());
    sw.activations = ElemType(r.pod<uint8_t>());
    sw.n = r.pod<int64_t>();
    sw.k = r.pod<int64_t>();
    sw.numOutliers = r.pod<int64_t>();
    for (uint64_t *f :
         {&sw.dataOffset, &sw.dataBytes, &sw.scalesOffset, &sw.scalesBytes,
          &sw.outlierColsOffset, &sw.outlierColsBytes, &sw.outliersOffset,
          &sw.outliersBytes})
      *f = r.pod<uint64_t>();
    plan.weights.push_back(sw);
  }
  uint32_t numDeviceKernels = r.count(84);
  for (uint32_t i = 0; i < numDeviceKernels && !r.failed; ++i) {
    DeviceKernel k;
    k.name = r.str();
    k.key = r.str();
    k.arch = r.str();
    k.steps = r.vec<int32_t>();
    for (uint64_t *f : {&k.cubinOffset, &k.cubinBytes, &k.cubinHash,
                        &k.ptxOffset, &k.ptxBytes, &k.ptxHash})
      *f = r.pod<uint64_t>();
    for (int32_t *f : {&k.registers, &k.spillStoreBytes, &k.spillLoadBytes,
                       &k.stackFrameBytes, &k.sharedBytes})
      *f = r.pod<int32_t>();
    plan.deviceKernels.push_back(std::move(k));
  }
  if (r.failed)
    return Status::invalidArgument("plan: the header is truncated");
  return Status::ok();
}

/// The product of a tensor's static dims (-1 counts as 1), or -1 when it
/// overflows or passes kMaxTensorElements.
int64_t staticElements(const ValueInfo &v) {
  int64_t n = 1;
  for (int64_t d : v.dims)
    if (d >= 0 && (__builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements))
      return -1;
  return n;
}

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v; // The format (and every supported host) is little-endian.
}

uint32_t load32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL,
                   kP3 = 0x165667B19E3779F9ULL, kP4 = 0x85EBCA77C2B2AE63ULL,
                   kP5 = 0x27D4EB2F165667C5ULL;

uint64_t xxRound(uint64_t acc, uint64_t input) {
  return rotl(acc + input * kP2, 31) * kP1;
}

uint64_t xxMerge(uint64_t acc, uint64_t v) {
  return (acc ^ xxRound(0, v)) * kP1 + kP4;
}

std::string hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

/// The metadata hash of an artifact whose blob starts at `blobOffset`:
/// everything before the blob, with its own field read as zero.
uint64_t metadataHash(const uint8_t *data, uint64_t blobOffset) {
  std::string meta(reinterpret_cast<const char *>(data), blobOffset);
  std::memset(&meta[kMetadataHashOffset], 0, 8);
  return planHash(meta.data(), meta.size());
}

Expected<Plan> parseBytes(const uint8_t *data, uint64_t size,
                          std::shared_ptr<void> keepAlive,
                          const ReadPlanOptions &options) {
  if (size < 16 || std::memcmp(data, kPlanMagic, 8) != 0)
    return Status::invalidArgument(
        "not a Folio plan (missing the FOLIOPLN magic)");
  uint32_t version = load32(data + 8);
  if (version != kPlanVersion)
    return Status::invalidArgument(
        "plan format version " + std::to_string(version) +
        " is not supported (this runtime reads version " +
        std::to_string(kPlanVersion) + "); recompile the model with folioc");
  // A file cut inside its fixed header has no size to compare with.
  uint64_t fileBytes =
      size >= kFixedHeader ? load64(data + kFileBytesOffset) : kFixedHeader;
  if (size < kFixedHeader || fileBytes != size)
    return Status::invalidArgument(
        "plan: the file is " + std::to_string(size) +
        " bytes but its header says " + std::to_string(fileBytes) +
        (size < fileBytes ? " (truncated)" : " (bytes appended)"));
  Reader fixed(data + 16, 24);
  uint64_t headerOffset = fixed.pod<uint64_t>();
  uint64_t headerBytes = fixed.pod<uint64_t>();
  uint64_t blobOffset = fixed.pod<uint64_t>();
  if (headerOffset != kFixedHeader || headerBytes > size - headerOffset ||
      blobOffset < headerOffset + headerBytes || blobOffset > size ||
      blobOffset % kBlobAlignment != 0)
    return Status::invalidArgument("plan: header or blob offsets out of range");
  uint64_t wantMeta = load64(data + kMetadataHashOffset);
  uint64_t gotMeta = metadataHash(data, blobOffset);
  if (gotMeta != wantMeta)
    return Status::invalidArgument(
        "plan: the metadata section (" + std::to_string(blobOffset) +
        " bytes) fails its checksum: the header says " + hex(wantMeta) +
        ", the bytes hash to " + hex(gotMeta) +
        "; the file is corrupt (re-copy or recompile it)");
  if (options.verifyWeights) {
    uint64_t wantWeights = load64(data + kWeightsHashOffset);
    uint64_t gotWeights = planHash(data + blobOffset, size - blobOffset);
    if (gotWeights != wantWeights)
      return Status::invalidArgument(
          "plan: the weights section (" + std::to_string(size - blobOffset) +
          " bytes at offset " + std::to_string(blobOffset) +
          ") fails its checksum: the header says " + hex(wantWeights) +
          ", the bytes hash to " + hex(gotWeights) +
          "; the file is corrupt (re-copy or recompile it)");
  }
  Plan plan;
  Reader r(data + headerOffset, headerBytes);
  if (Status s = decodeHeader(r, plan); !s)
    return s;
  plan.blob.adopt(data + blobOffset, size - blobOffset, std::move(keepAlive));
  if (Status s = validatePlan(plan); !s)
    return s;
  return plan;
}

/// The dialect's KV-cache rules (dialects/Folio/IR/FolioTypes.cpp) for a
/// plan from anywhere: "" when `v` pairs its dtype, scale layout, group and
/// residual window as a compiled cache can, else why not.
std::string cacheFormatError(const ValueInfo &v) {
  using Scale = ValueInfo::KVScale;
  bool isStatic = v.kvScale == Scale::PerTensor || v.kvScale == Scale::PerHead;
  switch (v.type) {
  case ElemType::F32:
  case ElemType::F16:
  case ElemType::BF16:
    if (v.kvScale != Scale::None)
      return "an unquantized cache takes no scales";
    break;
  case ElemType::F8E4M3:
  case ElemType::F8E5M2:
    if (!isStatic)
      return "fp8 caches take static scales (per_head or per_tensor)";
    break;
  case ElemType::I8:
    if (v.kvScale == Scale::None)
      return "int8 caches take per_token_head, per_token_group, per_head or "
             "per_tensor scales";
    break;
  case ElemType::I4:
    if (v.kvScale != Scale::PerTokenGroup)
      return "int4 caches take per_token_group scales";
    break;
  case ElemType::I2:
    if (v.kvScale != Scale::Kivi)
      return "int2 caches take kivi scales";
    break;
  case ElemType::I64:
  case ElemType::I32:
    return "not a KV-cache dtype";
  }
  if (v.kvScale == Scale::Kivi) {
    // Keys per channel over a block, values per token over kvGroup
    // channels, four elements per byte; the newest kvResidual tokens in
    // whole blocks of full precision.
    if (v.kvResidual <= 0 || v.kvResidual % v.blockSize != 0 ||
        v.kvResidual > kMaxKiviResidual)
      return "the residual window must be a positive multiple of the block "
             "size " +
             std::to_string(v.blockSize) + " up to " +
             std::to_string(kMaxKiviResidual) + " tokens";
    if (v.kvGroup <= 0 || v.headDim % v.kvGroup != 0)
      return "the group must divide head_dim " + std::to_string(v.headDim);
    if (v.headDim % 4 != 0)
      return "an int2 head_dim must be a multiple of 4 (four elements per "
             "byte)";
    return "";
  }
  if (v.kvResidual != 0)
    return "a residual window only goes with kivi scales";
  if (v.kvScale != Scale::PerTokenGroup) {
    if (v.kvGroup != 0)
      return "a group only goes with per_token_group or kivi scales";
    return "";
  }
  if (v.kvGroup <= 0 || v.headDim % v.kvGroup != 0)
    return "the group must divide head_dim " + std::to_string(v.headDim);
  if (v.type == ElemType::I4 && v.kvGroup % 2 != 0)
    return "an int4 group must be even (two elements per byte)";
  return "";
}

/// A kv_write (cache operand 0, four operands before the scales) or
/// paged_attention (cache operand 1, five before) takes k_scale and
/// v_scale exactly when its cache's scales are static: f32 constants of
/// [kvHeads] elements (per_head) or a scalar (per_tensor), each positive
/// and finite, since kernels divide by them.
Status checkStaticScales(const Plan &plan, const Step &s, int32_t cacheId,
                         size_t numBefore,
                         const std::vector<const Constant *> &constantOf) {
  using Scale = ValueInfo::KVScale;
  const ValueInfo &cache = plan.values[size_t(cacheId)];
  std::string where = "plan: step '" + s.kind + "' ('" + s.name +
                      "') on KV cache value " + std::to_string(cacheId) + " (" +
                      kvScaleName(cache.kvScale) + " scales)";
  bool perHead = cache.kvScale == Scale::PerHead;
  if (!perHead && cache.kvScale != Scale::PerTensor) {
    if (s.operands.size() > numBefore)
      return Status::invalidArgument(where + " takes no scale operands, got " +
                                     std::to_string(s.operands.size()) +
                                     " operands");
    return Status::ok();
  }
  if (s.operands.size() != numBefore + 2)
    return Status::invalidArgument(where +
                                   " needs k_scale and v_scale "
                                   "operands, got " +
                                   std::to_string(s.operands.size()) +
                                   " operands");
  std::vector<int64_t> dims;
  if (perHead)
    dims.push_back(cache.kvHeads);
  const char *names[] = {"k_scale", "v_scale"};
  for (size_t i = 0; i < 2; ++i) {
    int32_t id = s.operands[numBefore + i];
    std::string what =
        where + ": " + names[i] + " (value " + std::to_string(id) + ")";
    const Constant *c = id >= 0 ? constantOf[size_t(id)] : nullptr;
    if (!c || plan.values[size_t(id)].type != ElemType::F32 ||
        plan.values[size_t(id)].dims != dims)
      return Status::invalidArgument(
          what + " must be a constant f32 " +
          (perHead ? "[" + std::to_string(cache.kvHeads) + "]"
                   : std::string("scalar")));
    for (uint64_t e = 0; e < c->bytes / sizeof(float); ++e) {
      float x;
      std::memcpy(&x, plan.blob.data() + c->offset + e * sizeof(float),
                  sizeof(float));
      if (!(std::isfinite(x) && x > 0))
        return Status::invalidArgument(what + " element " + std::to_string(e) +
                                       " is " + std::to_string(x) +
                                       "; scales must be positive and "
                                       "finite");
    }
  }
  return Status::ok();
}

/// `s`'s k_scale and v_scale operands (at numBefore and numBefore + 1; -1
/// when absent) against those of the first step on the same cache, which
/// `k`, `v` and `first` record (first: null until a step sets them).
Status checkSameScales(const Step &s, int32_t cacheId, size_t numBefore,
                       int32_t &k, int32_t &v, const Step *&first) {
  auto operand = [&](size_t i) {
    return s.operands.size() > i ? s.operands[i] : int32_t(-1);
  };
  int32_t ks = operand(numBefore), vs = operand(numBefore + 1);
  std::string where = "plan: step '" + s.kind + "' ('" + s.name +
                      "') on KV cache value " + std::to_string(cacheId);
  auto pair = [](int32_t a, int32_t b) {
    auto id = [](int32_t x) {
      return x < 0 ? std::string("none") : "value " + std::to_string(x);
    };
    return "k_scale " + id(a) + ", v_scale " + id(b);
  };
  if ((ks < 0) != (vs < 0))
    return Status::invalidArgument(where + " has " + pair(ks, vs) +
                                   "; a cache takes both scales or neither");
  if (!first) {
    k = ks;
    v = vs;
    first = &s;
    return Status::ok();
  }
  if (ks != k || vs != v)
    return Status::invalidArgument(
        where + " has " + pair(ks, vs) + " but step '" + first->kind + "' ('" +
        first->name + "') on the same cache has " + pair(k, v) +
        "; every step of a cache uses the same scales");
  return Status::ok();
}

} // namespace

uint64_t planHash(const void *data, uint64_t bytes) {
  // XXH64 with seed 0, as the xxHash specification defines it.
  const uint8_t *p = static_cast<const uint8_t *>(data);
  const uint8_t *end = p + bytes;
  uint64_t h;
  if (bytes >= 32) {
    uint64_t v1 = kP1 + kP2, v2 = kP2, v3 = 0, v4 = 0 - kP1;
    const uint8_t *limit = end - 32;
    do {
      v1 = xxRound(v1, load64(p));
      v2 = xxRound(v2, load64(p + 8));
      v3 = xxRound(v3, load64(p + 16));
      v4 = xxRound(v4, load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = xxMerge(h, v1);
    h = xxMerge(h, v2);
    h = xxMerge(h, v3);
    h = xxMerge(h, v4);
  } else {
    h = kP5;
  }
  h += bytes;
  for (; end - p >= 8; p += 8)
    h = rotl(h ^ xxRound(0, load64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    h = rotl(h ^ (uint64_t(load32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p)
    h = rotl(h ^ (uint64_t(*p) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::string serializePlan(const Plan &plan) {
  std::string header = encodeHeader(plan);
  uint64_t blobOffset = (kFixedHeader + header.size() + kBlobAlignment - 1) /
                        kBlobAlignment * kBlobAlignment;
  Writer w;
  w.out.append(kPlanMagic, 8);
  w.pod<uint32_t>(kPlanVersion);
  w.pod<uint32_t>(0);
  w.pod<uint64_t>(kFixedHeader);
  w.pod<uint64_t>(header.size());
  w.pod<uint64_t>(blobOffset);
  w.pod<uint64_t>(blobOffset + plan.blob.size());
  w.pod<uint64_t>(0); // the metadata hash, below
  w.pod<uint64_t>(planHash(plan.blob.data(), plan.blob.size()));
  w.out += header;
  w.out.resize(blobOffset, '\0');
  uint64_t meta =
      metadataHash(reinterpret_cast<const uint8_t *>(w.out.data()), blobOffset);
  std::memcpy(&w.out[kMetadataHashOffset], &meta, 8);
  w.out.append(reinterpret_cast<const char *>(plan.blob.data()),
               plan.blob.size());
  return w.out;
}

Status writePlan(const Plan &plan, const std::string &path) {
  std::string bytes = serializePlan(plan);
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return Status::invalidArgument("cannot write '" + path +
                                   "': " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::invalidArgument("cannot write '" + path + "'");
  }
  return Status::ok();
}

/// Parses the plan mapped at `map` (`size` bytes of the file `path`; errors
/// name `where`). Weights are read from the mapping for as long as the plan
/// lives: a file truncated meanwhile faults (SIGBUS), which the registry
/// turns into an error naming the file (PlanMapping.h).
static Expected<Plan> parseMapping(void *map, size_t size,
                                   const std::string &path,
                                   const std::string &where,
                                   const ReadPlanOptions &options) {
  int slot = registerPlanMapping(map, size, path.c_str());
  std::shared_ptr<void> keep(map, [size, slot](void *p) {
    unregisterPlanMapping(slot);
    ::munmap(p, size);
  });
  Expected<Plan> plan =
      parseBytes(static_cast<const uint8_t *>(map), size, keep, options);
  if (!plan)
    return Status::invalidArgument(where + ": " + plan.status().message());
  return plan;
}

Expected<Plan> readPlan(const std::string &path,
                        const ReadPlanOptions &options) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return Status::notFound("cannot open '" + path +
                            "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    return Status::invalidArgument("'" + path + "' is empty or unreadable");
  }
  size_t size = size_t(st.st_size);
  void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED)
    return Status::invalidArgument("cannot map '" + path + "'");
  return parseMapping(map, size, path, path, options);
}

Expected<Plan> readPlanAt(const std::string &path, uint64_t offset,
                          uint64_t bytes, const ReadPlanOptions &options) {
  std::string where = path + " (the plan at byte offset " +
                      std::to_string(offset) + ", " + std::to_string(bytes) +
                      " bytes)";
  long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0 || offset % uint64_t(page) != 0)
    return Status::invalidArgument(
        where + ": the offset is not a multiple of the page size (" +
        std::to_string(page) + "), so the plan cannot be mapped in place");
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return Status::notFound("cannot open '" + path +
                            "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < 0 || bytes == 0 ||
      offset > uint64_t(st.st_size) || bytes > uint64_t(st.st_size) - offset) {
    ::close(fd);
    return Status::invalidArgument(
        where + ": the file has " + std::to_string(st.st_size) +
        " bytes, so the plan lies outside it (truncated?)");
  }
  size_t size = size_t(bytes);
  void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, off_t(offset));
  ::close(fd);
  if (map == MAP_FAILED)
    return Status::invalidArgument("cannot map " + where + ": " +
                                   std::strerror(errno));
  return parseMapping(map, size, path, where, options);
}

Expected<Plan> parsePlan(const std::string &bytes,
                         const ReadPlanOptions &options) {
  // Copy so the blob is 64-byte aligned, as the mapping would be.
  Blob copy;
  copy.append(bytes.data(), bytes.size());
  auto holder = std::make_shared<Blob>(std::move(copy));
  return parseBytes(holder->data(), holder->size(), holder, options);
}

Status validatePlan(const Plan &plan) {
  int64_t n = int64_t(plan.values.size());
  auto bad = [&](int32_t id) { return id < -1 || id >= n; };
  for (const Argument &a : plan.inputs)
    if (a.value < 0 || a.value >= n)
      return Status::invalidArgument("plan: input '" + a.name +
                                     "' names no value");
  for (int32_t o : plan.outputs)
    if (o < 0 || o >= n)
      return Status::invalidArgument("plan: an output names no value");
  // Values: tensor dims are sizes or -1 (run time); a KV cache has heads,
  // a head size and a power-of-two block (the kernels divide by them).
  int64_t configBlock = plan.configValue("block_size", 0);
  // The KV dtype the plan was compiled for, when the compiler recorded it:
  // folio::KVCacheDType's value (compiler/Target/Target.h, which the
  // runtime does not include), resolved, so never auto (0).
  for (const auto &[key, value] : plan.config)
    if (key == "kv_cache_dtype" &&
        (value < kMinConfigKVCacheDType || value > kMaxConfigKVCacheDType))
      return Status::invalidArgument(
          "plan: the config's kv_cache_dtype " + std::to_string(value) +
          " is not a KV-cache dtype; it must be " +
          std::to_string(kMinConfigKVCacheDType) + " (f32) to " +
          std::to_string(kMaxConfigKVCacheDType) + " (int2)");
  for (int64_t id = 0; id < n; ++id) {
    const ValueInfo &v = plan.values[size_t(id)];
    std::string where = "plan: value " + std::to_string(id);
    if (v.kind == ValueInfo::Kind::KVCache) {
      if (v.kvHeads <= 0 || v.headDim <= 0)
        return Status::invalidArgument(
            where + " is a KV cache with " + std::to_string(v.kvHeads) +
            " heads of " + std::to_string(v.headDim) +
            " elements; both must be positive");
      // Bounded so that slot and pool sizes (heads x head_dim x block x
      // blocks) cannot overflow however they are multiplied.
      if (v.kvHeads > kMaxKVHeads || v.headDim > kMaxHeadDim)
        return Status::invalidArgument(
            where + " is a KV cache with " + std::to_string(v.kvHeads) +
            " heads of " + std::to_string(v.headDim) +
            " elements; heads may be at most " + std::to_string(kMaxKVHeads) +
            " and head_dim at most " + std::to_string(kMaxHeadDim));
      if (v.blockSize < 1 || v.blockSize > 256 ||
          (v.blockSize & (v.blockSize - 1)) != 0)
        return Status::invalidArgument(
            where + " is a KV cache with block size " +
            std::to_string(v.blockSize) +
            "; it must be a power of two from 1 to 256");
      if (configBlock != 0 && v.blockSize != configBlock)
        return Status::invalidArgument(
            where + " is a KV cache with block size " +
            std::to_string(v.blockSize) + " but the plan's config says " +
            std::to_string(configBlock));
      if (std::string why = cacheFormatError(v); !why.empty()) {
        // The residual window only where it is set or should be.
        std::string format = std::string(kvScaleName(v.kvScale));
        if (v.kvResidual != 0 || v.kvScale == ValueInfo::KVScale::Kivi)
          format += ", group " + std::to_string(v.kvGroup) + " and residual " +
                    std::to_string(v.kvResidual);
        else
          format += " and group " + std::to_string(v.kvGroup);
        return Status::invalidArgument(where + " is a KV cache of " +
                                       elemTypeName(v.type) + " with scale " +
                                       format + ": " + why);
      }
      continue;
    }
    if (!isTensorElemType(v.type))
      return Status::invalidArgument(
          where + " is a tensor of " + elemTypeName(v.type) +
          "; fp8_e4m3, fp8_e5m2, int8, int4 and int2 are KV-cache dtypes "
          "only");
    if (v.kvScale != ValueInfo::KVScale::None || v.kvGroup != 0 ||
        v.kvResidual != 0)
      return Status::invalidArgument(where + " is a tensor with KV-cache "
                                             "scales");
    for (int64_t d : v.dims)
      if (d < -1)
        return Status::invalidArgument(where + " has the dim " +
                                       std::to_string(d) +
                                       "; dims are sizes or -1");
    if (int64_t(v.dims.size()) > kMaxTensorRank)
      return Status::invalidArgument(
          where + " has rank " + std::to_string(v.dims.size()) +
          "; a tensor has at most " + std::to_string(kMaxTensorRank) + " dims");
    if (staticElements(v) < 0)
      return Status::invalidArgument(
          where + " has dims " + dimsString(v.dims) + ", more than " +
          std::to_string(kMaxTensorElements) +
          " (2^40) elements; a tensor has at most that many");
  }
  for (const Constant &c : plan.constants) {
    if (c.value < 0 || c.value >= n)
      return Status::invalidArgument("plan: a constant names no value");
    if (c.offset > plan.blob.size() || c.bytes > plan.blob.size() - c.offset)
      return Status::invalidArgument("plan: constant of value " +
                                     std::to_string(c.value) +
                                     " lies outside the blob");
    // Writers align every constant; a moved offset reads other bytes.
    if (c.offset % kBlobAlignment != 0)
      return Status::invalidArgument(
          "plan: constant of value " + std::to_string(c.value) +
          " is at blob offset " + std::to_string(c.offset) +
          ", not a multiple of " + std::to_string(kBlobAlignment));
    const ValueInfo &v = plan.values[size_t(c.value)];
    if (v.kind != ValueInfo::Kind::Tensor)
      return Status::invalidArgument("plan: constant of value " +
                                     std::to_string(c.value) +
                                     " is not a tensor");
    uint64_t numel = 1;
    for (int64_t d : v.dims) {
      if (d < 0)
        return Status::invalidArgument("plan: constant with a dynamic dim");
      if (__builtin_mul_overflow(numel, uint64_t(d), &numel))
        return Status::invalidArgument("plan: constant of value " +
                                       std::to_string(c.value) +
                                       " has more elements than fit in 64 "
                                       "bits");
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel, uint64_t(elemTypeSize(v.type)), &bytes) ||
        bytes != c.bytes)
      return Status::invalidArgument("plan: constant of value " +
                                     std::to_string(c.value) +
                                     " has the wrong size");
  }
  // Buffers: each value's id in range, each size non-negative.
  for (const BufferInfo &b : plan.buffers)
    if (b.staticBytes < 0)
      return Status::invalidArgument("plan: a buffer has a negative size");
  // Each value in a buffer has exactly the buffer's size expression (the
  // compiler shares a buffer only between such values), and every buffer
  // holds one: the executor allocates each buffer it is given.
  std::vector<bool> bufferUsed(plan.buffers.size(), false);
  for (int64_t id = 0; id < n; ++id) {
    const ValueInfo &v = plan.values[size_t(id)];
    int32_t b = v.buffer;
    if (b < -1 || b >= int64_t(plan.buffers.size()))
      return Status::invalidArgument("plan: value " + std::to_string(id) +
                                     " names buffer " + std::to_string(b) +
                                     ", which does not exist");
    if (b < 0)
      continue;
    bufferUsed[size_t(b)] = true;
    const BufferInfo &buffer = plan.buffers[size_t(b)];
    int64_t dynamic = std::count(v.dims.begin(), v.dims.end(), int64_t(-1));
    DimSymbol symbol = dynamic ? v.symbol : DimSymbol::None;
    bool sized = v.kind == ValueInfo::Kind::Tensor && dynamic <= 1 &&
                 (dynamic == 0 || v.symbol != DimSymbol::None) &&
                 staticElements(v) * int64_t(elemTypeSize(v.type)) ==
                     buffer.staticBytes &&
                 symbol == buffer.symbol;
    if (!sized)
      return Status::invalidArgument(
          "plan: value " + std::to_string(id) + " (" +
          (v.kind == ValueInfo::Kind::Tensor
               ? std::string(elemTypeName(v.type)) + " " + dimsString(v.dims) +
                     ", dynamic dim " + dimSymbolName(v.symbol)
               : std::string("a KV cache")) +
          ") is in buffer " + std::to_string(b) + " of " +
          std::to_string(buffer.staticBytes) + " bytes x " +
          dimSymbolName(buffer.symbol) +
          "; a buffer holds tensors of its own size, with at most one "
          "dynamic dim, which names what it counts");
  }
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (!bufferUsed[b])
      return Status::invalidArgument("plan: buffer " + std::to_string(b) +
                                     " holds no value");
  // The logits' width is the vocabulary the config names.
  int64_t vocab = plan.configValue("vocab", 0);
  if (vocab != 0 && plan.outputs.size() == 1) {
    const ValueInfo &logits = plan.values[size_t(plan.outputs[0])];
    if (logits.dims.size() != 2 || logits.dims[1] != vocab)
      return Status::invalidArgument("plan: the config's vocab " +
                                     std::to_string(vocab) +
                                     " is not the width of the logits output");
  }
  std::vector<const Constant *> constantOf(size_t(n), nullptr);
  for (const Constant &c : plan.constants)
    constantOf[size_t(c.value)] = &c;
  // Per cache value: the (k_scale, v_scale) ids of its first kv_write or
  // paged_attention (-1: none), which every later step must repeat; a cache
  // is quantized with one set of scales.
  struct ScalePair {
    int32_t k = -1, v = -1;
    const Step *first = nullptr;
  };
  std::vector<ScalePair> scalesOf(static_cast<size_t>(n));
  // Steps are in dataflow order, each value defined once (the compiler
  // writes SSA in program order): every operand is an input, a constant or
  // an earlier step's result, so no kernel, fused or not, reads a value
  // before it exists.
  std::vector<bool> defined(size_t(n), false);
  for (const Argument &a : plan.inputs)
    defined[size_t(a.value)] = true;
  for (const Constant &c : plan.constants)
    defined[size_t(c.value)] = true;
  // Stored weights define the weight operands they stand for.
  if (Status st = validateStoredWeights(plan); !st)
    return st;
  for (const StoredWeight &w : plan.weights)
    for (int32_t i = 0; i < w.numOperands; ++i)
      defined[size_t(
          plan.steps[size_t(w.step)].operands[size_t(w.operand + i)])] = true;
  for (const Step &s : plan.steps) {
    if (!isOpKind(s.kind))
      return Status::invalidArgument("plan: step '" + s.name +
                                     "' has the unknown op kind '" + s.kind +
                                     "'");
    if (s.kind == "spec_verify")
      return Status::invalidArgument(
          "plan: step '" + s.name +
          "' of forward is a spec_verify, which runs in the verify entries "
          "only");
    for (int32_t id : s.operands)
      if (bad(id))
        return Status::invalidArgument("plan: step '" + s.kind +
                                       "' has an operand out of range");
    for (int32_t id : s.results)
      if (id < 0 || id >= n)
        return Status::invalidArgument("plan: step '" + s.kind +
                                       "' has a result out of range");
    for (int32_t id : s.operands)
      if (id >= 0 && !defined[size_t(id)])
        return Status::invalidArgument(
            "plan: step '" + s.kind + "' ('" + s.name + "') reads value " +
            std::to_string(id) +
            " before an input, a constant or an earlier step defines it");
    for (int32_t id : s.results) {
      if (defined[size_t(id)])
        return Status::invalidArgument(
            "plan: step '" + s.kind + "' ('" + s.name + "') writes value " +
            std::to_string(id) +
            ", which an input, a constant or an earlier step already "
            "defines");
      defined[size_t(id)] = true;
    }
    // Scales, epsilons, thetas: a non-finite one is a corrupted plan.
    for (const Attr &a : s.attrs) {
      bool finite = true;
      if (auto *f = std::get_if<double>(&a.value))
        finite = std::isfinite(*f);
      else if (auto *fs = std::get_if<std::vector<double>>(&a.value))
        for (double x : *fs)
          finite = finite && std::isfinite(x);
      if (!finite)
        return Status::invalidArgument("plan: step '" + s.kind + "' ('" +
                                       s.name +
                                       "') has the non-finite "
                                       "attribute '" +
                                       a.name + "'");
    }
    size_t cacheOperand = s.kind == "kv_write" ? 0 : 1;
    // A KV cache has no tensor: only the operand of kv_write and
    // paged_attention that takes the cache may name one.
    for (size_t k = 0; k < s.operands.size(); ++k) {
      int32_t id = s.operands[k];
      if (id >= 0 && plan.values[size_t(id)].kind == ValueInfo::Kind::KVCache &&
          !((s.kind == "kv_write" || s.kind == "paged_attention") &&
            k == cacheOperand))
        return Status::invalidArgument(
            "plan: step '" + s.kind + "' ('" + s.name +
            "') reads the KV cache " + std::to_string(id) + " as operand " +
            std::to_string(k) +
            "; only kv_write (operand 0) and paged_attention (operand 1) "
            "take a cache");
    }
    if ((s.kind == "kv_write" || s.kind == "paged_attention") &&
        s.operands.size() > cacheOperand) {
      int32_t cache = s.operands[cacheOperand];
      if (cache >= 0 &&
          plan.values[size_t(cache)].kind == ValueInfo::Kind::KVCache) {
        if (Status st =
                checkStaticScales(plan, s, cache, cacheOperand + 4, constantOf);
            !st)
          return st;
        ScalePair &seen = scalesOf[size_t(cache)];
        if (Status st = checkSameScales(s, cache, cacheOperand + 4, seen.k,
                                        seen.v, seen.first);
            !st)
          return st;
      }
    }
  }
  for (int32_t o : plan.outputs)
    if (!defined[size_t(o)])
      return Status::invalidArgument(
          "plan: output value " + std::to_string(o) +
          " is not an input, a constant or a step's result");
  // Kernels cover the steps in order, each step once; releases name only
  // values a forward makes (a released constant would be gone for good).
  std::vector<bool> lasting(size_t(n), false);
  for (const Constant &c : plan.constants)
    lasting[size_t(c.value)] = true;
  for (const StoredWeight &w : plan.weights)
    for (int32_t i = 0; i < w.numOperands; ++i)
      lasting[size_t(
          plan.steps[size_t(w.step)].operands[size_t(w.operand + i)])] = true;
  for (int32_t o : plan.outputs)
    lasting[size_t(o)] = true;
  for (int64_t id = 0; id < n; ++id)
    if (plan.values[size_t(id)].kind == ValueInfo::Kind::KVCache)
      lasting[size_t(id)] = true;
  int64_t next = 0;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const Kernel &k = plan.kernels[i];
    std::string where =
        "plan: kernel " + std::to_string(i) + " ('" + k.kind + "')";
    if (!isKernelKind(k.kind))
      return Status::invalidArgument(where + " has an unknown kind");
    if (k.firstStep != next || k.numSteps < 1 ||
        int64_t(k.numSteps) > int64_t(plan.steps.size()) - next)
      return Status::invalidArgument(where + " does not cover the steps "
                                             "after the previous kernel");
    next += k.numSteps;
    for (const std::vector<int32_t> *ids : {&k.inputs, &k.outputs, &k.releases})
      for (int32_t id : *ids)
        if (id < 0 || id >= n)
          return Status::invalidArgument(where + " names a value out of "
                                                 "range");
    for (int32_t id : k.releases)
      if (lasting[size_t(id)])
        return Status::invalidArgument(
            where + " releases value " + std::to_string(id) +
            ", a constant, output or KV cache that must live on");
  }
  if (next != int64_t(plan.steps.size()))
    return Status::invalidArgument(
        "plan: " + std::to_string(plan.steps.size() - next) +
        " steps belong to no kernel");
  if (Status st = validateDeviceKernels(plan); !st)
    return st;
  return validateEntries(plan);
}

} // namespace folio::plan
