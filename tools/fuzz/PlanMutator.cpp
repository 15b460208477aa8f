//===- PlanMutator.cpp - Field-level mutations of .folio plans ------------===//

#include "tools/fuzz/PlanMutator.h"

#include "runtime/Plan/PlanIO.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace folio::fuzz {
namespace {

using Rng = std::mt19937_64;

constexpr size_t kFixedHeader = 64;

/// What a field holds, which decides the values worth writing there.
enum class Kind : uint8_t {
  Enum8,  ///< value kind, element type, dim symbol, scale layout, attr tag
  Id32,   ///< a value id (operands, results, inputs, kernel lists)
  Int32,  ///< kernel first step and step count, buffer ids
  Int64,  ///< KV geometry, config values, int attributes, buffer sizes
  Dim64,  ///< tensor dims
  U64,    ///< constant offsets and sizes
  F64,    ///< float attributes
  String, ///< a length-prefixed string (the offset of its length)
};

/// Which strings may replace a string: its role in the layout.
enum class Role : uint8_t {
  None,
  Entry,
  ConfigKey,
  InputName,
  StepKind,
  StepName,
  AttrName,
  AttrString,
  KernelKind,
  EntryName,
  DeviceArch,
};

struct Field {
  size_t offset; ///< in the header section
  Kind kind;
  Role role = Role::None;
};

/// A length-prefixed list of fixed-size elements (ids, dims, floats).
struct List {
  size_t countOffset;
  size_t elemSize;
  Kind kind;
};

/// A list of variable-size records (values, constants, steps, ...).
struct Records {
  size_t countOffset;
  std::vector<std::pair<size_t, size_t>> spans; ///< [begin, end)
};

struct ConstantRef {
  int32_t value;
  uint64_t offset, bytes;
};

/// Everything the walker found in one plan's header section.
struct Layout {
  std::vector<Field> fields;
  std::vector<List> lists;
  std::vector<Records> records;
  std::vector<ConstantRef> constants;
  std::vector<uint8_t> valueTypes;
  /// Seen, by Role (one slot per Role enumerator).
  std::vector<std::string> strings[size_t(Role::DeviceArch) + 1];
};

class Walker {
public:
  Walker(const std::string &h, Layout &l) : h(h), l(l) {}
  bool ok = true;
  size_t pos = 0;

  template <typename T> T pod(Kind kind, Role role = Role::None) {
    T v{};
    if (!ok || h.size() - pos < sizeof(T)) {
      ok = false;
      return v;
    }
    l.fields.push_back({pos, kind, role});
    std::memcpy(&v, h.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  uint32_t count() {
    uint32_t v = 0;
    if (!ok || h.size() - pos < 4) {
      ok = false;
      return 0;
    }
    std::memcpy(&v, h.data() + pos, 4);
    pos += 4;
    // No record is smaller than a byte: a count the rest cannot hold means
    // the bytes are not a plan.
    if (v > h.size() - pos)
      ok = false;
    return ok ? v : 0;
  }
  std::string str(Role role) {
    size_t at = pos;
    uint32_t n = count();
    if (!ok)
      return {};
    l.fields.push_back({at, Kind::String, role});
    std::string s = h.substr(pos, n);
    pos += n;
    l.strings[size_t(role)].push_back(s);
    return s;
  }
  template <typename T> void vec(Kind kind) {
    size_t at = pos;
    uint32_t n = count();
    l.lists.push_back({at, sizeof(T), kind});
    for (uint32_t i = 0; i < n && ok; ++i)
      pod<T>(kind);
  }
  /// Walks `n` records with `body`, recording each one's span.
  template <typename F> void records(F body) {
    Records r;
    r.countOffset = pos;
    uint32_t n = count();
    for (uint32_t i = 0; i < n && ok; ++i) {
      size_t begin = pos;
      body();
      r.spans.push_back({begin, pos});
    }
    l.records.push_back(std::move(r));
  }

private:
  const std::string &h;
  Layout &l;
};

void walkArguments(Walker &w) {
  w.records([&] {
    w.str(Role::InputName);
    w.pod<int32_t>(Kind::Id32);
  });
}

void walkSteps(Walker &w) {
  w.records([&] {
    w.str(Role::StepKind);
    w.str(Role::StepName);
    w.vec<int32_t>(Kind::Id32);
    w.vec<int32_t>(Kind::Id32);
    w.records([&] {
      w.str(Role::AttrName);
      switch (w.pod<uint8_t>(Kind::Enum8)) {
      case 0:
        w.pod<int64_t>(Kind::Int64);
        break;
      case 1:
        w.pod<double>(Kind::F64);
        break;
      case 2:
        w.str(Role::AttrString);
        break;
      case 3:
        w.vec<int64_t>(Kind::Int64);
        break;
      case 4:
        w.vec<double>(Kind::F64);
        break;
      default:
        w.ok = false;
      }
    });
  });
}

/// The records of PlanIO.cpp's encodeHeader, in its order.
bool walkHeader(const std::string &h, Layout &l) {
  Walker w(h, l);
  w.str(Role::Entry);
  w.records([&] {
    w.str(Role::ConfigKey);
    w.pod<int64_t>(Kind::Int64);
  });
  w.records([&] {
    w.pod<uint8_t>(Kind::Enum8);
    l.valueTypes.push_back(w.pod<uint8_t>(Kind::Enum8));
    w.vec<int64_t>(Kind::Dim64);
    w.pod<int64_t>(Kind::Int64); // kvHeads
    w.pod<int64_t>(Kind::Int64); // headDim
    w.pod<int64_t>(Kind::Int64); // blockSize
    w.pod<uint8_t>(Kind::Enum8); // symbol
    w.pod<int32_t>(Kind::Int32); // buffer
    w.pod<uint8_t>(Kind::Enum8); // kvScale
    w.pod<int64_t>(Kind::Int64); // kvGroup
    w.pod<int64_t>(Kind::Int64); // kvResidual
  });
  walkArguments(w);
  w.vec<int32_t>(Kind::Id32);
  w.records([&] {
    ConstantRef c;
    c.value = w.pod<int32_t>(Kind::Id32);
    c.offset = w.pod<uint64_t>(Kind::U64);
    c.bytes = w.pod<uint64_t>(Kind::U64);
    l.constants.push_back(c);
  });
  walkSteps(w);
  w.records([&] {
    w.str(Role::KernelKind);
    w.pod<int32_t>(Kind::Int32);
    w.pod<int32_t>(Kind::Int32);
    w.vec<int32_t>(Kind::Id32);
    w.vec<int32_t>(Kind::Id32);
    w.vec<int32_t>(Kind::Id32);
  });
  w.records([&] {
    w.pod<int64_t>(Kind::Int64);
    w.pod<uint8_t>(Kind::Enum8);
  });
  w.records([&] {
    w.str(Role::EntryName);
    walkArguments(w);
    w.vec<int32_t>(Kind::Id32);
    walkSteps(w);
  });
  // Stored weights: step, operand, operand count, dtype, layout,
  // activations, n, k, outliers, then the offsets and sizes of their four
  // byte ranges.
  w.records([&] {
    for (int i = 0; i < 3; ++i)
      w.pod<int32_t>(Kind::Int32);
    for (int i = 0; i < 3; ++i)
      w.pod<uint8_t>(Kind::Enum8);
    for (int i = 0; i < 3; ++i)
      w.pod<int64_t>(Kind::Int64);
    for (int i = 0; i < 8; ++i)
      w.pod<uint64_t>(Kind::U64);
  });
  // Device kernels: name, cache key, arch, steps, then the offset, size
  // and checksum of the cubin and of the PTX, then five resource figures.
  w.records([&] {
    w.str(Role::None);
    w.str(Role::None);
    w.str(Role::DeviceArch);
    w.vec<int32_t>(Kind::Id32);
    for (int i = 0; i < 6; ++i)
      w.pod<uint64_t>(Kind::U64);
    for (int i = 0; i < 5; ++i)
      w.pod<int32_t>(Kind::Int32);
  });
  return w.ok && w.pos == h.size();
}

uint64_t load64(const std::string &b, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

void store64(std::string &b, size_t at, uint64_t v) {
  std::memcpy(&b[at], &v, 8);
}

/// A plan split into its three sections.
struct Image {
  std::string fixed, header, blob;
};

bool split(const std::string &bytes, Image &img) {
  if (bytes.size() < kFixedHeader ||
      std::memcmp(bytes.data(), plan::kPlanMagic, 8) != 0)
    return false;
  uint64_t headerOffset = load64(bytes, 16), headerBytes = load64(bytes, 24),
           blobOffset = load64(bytes, 32);
  if (headerOffset != kFixedHeader || headerBytes > bytes.size() - 64 ||
      blobOffset < 64 + headerBytes || blobOffset > bytes.size())
    return false;
  img.fixed = bytes.substr(0, kFixedHeader);
  img.header = bytes.substr(kFixedHeader, headerBytes);
  img.blob = bytes.substr(blobOffset);
  return true;
}

/// Lays the sections out as writePlan does and seals them.
std::string join(Image &img) {
  uint64_t blobOffset =
      (kFixedHeader + img.header.size() + plan::kBlobAlignment - 1) /
      plan::kBlobAlignment * plan::kBlobAlignment;
  std::string out = img.fixed;
  store64(out, 24, img.header.size());
  store64(out, 32, blobOffset);
  store64(out, plan::kFileBytesOffset, blobOffset + img.blob.size());
  store64(out, plan::kWeightsHashOffset,
          plan::planHash(img.blob.data(), img.blob.size()));
  out += img.header;
  out.resize(blobOffset, '\0');
  store64(out, plan::kMetadataHashOffset, 0);
  store64(out, plan::kMetadataHashOffset,
          plan::planHash(out.data(), out.size()));
  return out + img.blob;
}

uint64_t pick(Rng &rng, uint64_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
}

bool chance(Rng &rng, unsigned oneIn) { return pick(rng, oneIn) == 0; }

template <typename T, size_t N> const T &pickOf(Rng &rng, const T (&a)[N]) {
  return a[pick(rng, N)];
}

int64_t interestingInt(Rng &rng, int64_t current, int64_t numValues) {
  static const int64_t values[] = {0,
                                   1,
                                   -1,
                                   2,
                                   3,
                                   4,
                                   5,
                                   7,
                                   8,
                                   16,
                                   63,
                                   64,
                                   256,
                                   257,
                                   4096,
                                   4097,
                                   65536,
                                   int64_t(1) << 31,
                                   (int64_t(1) << 31) - 1,
                                   -(int64_t(1) << 31),
                                   int64_t(1) << 32,
                                   int64_t(1) << 40,
                                   int64_t(1) << 62,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min(),
                                   -2};
  switch (pick(rng, 8)) {
  // Wrapping arithmetic: INT64_MAX + 1 is a fine value to try.
  case 0:
    return int64_t(uint64_t(current) + 1);
  case 1:
    return int64_t(uint64_t(current) - 1);
  case 2:
    return int64_t(0 - uint64_t(current));
  case 3:
    return int64_t(uint64_t(current) * 2);
  case 4:
    return numValues > 0 ? int64_t(pick(rng, uint64_t(numValues) + 2)) - 1
                         : current / 2;
  default:
    return pickOf(rng, values);
  }
}

double interestingDouble(Rng &rng, double current) {
  static const double values[] = {0.0,
                                  -0.0,
                                  1.0,
                                  -1.0,
                                  0.5,
                                  1e-300,
                                  1e300,
                                  65504.0,
                                  std::numeric_limits<double>::denorm_min(),
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(),
                                  1e-38,
                                  3.5e38};
  switch (pick(rng, 4)) {
  case 0:
    return current * 2;
  case 1:
    return -current;
  default:
    return pickOf(rng, values);
  }
}

/// Strings worth trying in a field of `role`, besides those the plan holds.
std::vector<std::string> candidates(Role role) {
  switch (role) {
  case Role::StepKind: {
    std::vector<std::string> v = plan::opKinds();
    v.push_back("matmul");
    return v;
  }
  case Role::KernelKind: {
    std::vector<std::string> v = plan::opKinds();
    for (const std::string &k : plan::fusedKernelKinds())
      v.push_back(k);
    return v;
  }
  case Role::ConfigKey:
    return {"vocab", "block_size", "max_positions", "max_context",
            "kv_cache_dtype"};
  case Role::InputName:
    return {"tokens",        "positions",    "query_start_loc", "seq_lens",
            "block_tables",  "slot_mapping", "logits_indices",  "kv_cache.0",
            "target_logits", "draft_tokens", "draft_probs",     "uniforms"};
  case Role::EntryName:
    return {plan::kVerifyGreedyEntry, plan::kVerifySampleEntry,
            plan::kVerifySampleOneHotEntry, "forward"};
  case Role::AttrString:
    return {"interleaved", "half",   "gelu_tanh", "gelu", "silu",   "greedy",
            "sample",      "add",    "mul",       "none", "linear", "llama3",
            "yarn",        "out_in", "in_out",    "sqrt", "div",    "exp"};
  case Role::DeviceArch:
    return {"sm_80", "sm_86", "sm_89", "sm_90a", "sm_75", "compute_90"};
  case Role::AttrName:
    return {"axis", "mode", "style",      "causal", "eps",  "shape",
            "perm", "kind", "rotary_dim", "scale",  "base", "weight_layout"};
  default:
    return {""};
  }
}

void writeInt(std::string &h, const Field &f, int64_t v) {
  switch (f.kind) {
  case Kind::Enum8:
    h[f.offset] = char(uint8_t(v));
    return;
  case Kind::Id32:
  case Kind::Int32: {
    int32_t x = int32_t(v);
    std::memcpy(&h[f.offset], &x, 4);
    return;
  }
  default:
    std::memcpy(&h[f.offset], &v, 8);
  }
}

int64_t readInt(const std::string &h, const Field &f) {
  switch (f.kind) {
  case Kind::Enum8:
    return uint8_t(h[f.offset]);
  case Kind::Id32:
  case Kind::Int32: {
    int32_t x;
    std::memcpy(&x, &h[f.offset], 4);
    return x;
  }
  default: {
    int64_t x;
    std::memcpy(&x, &h[f.offset], 8);
    return x;
  }
  }
}

void replaceString(std::string &h, size_t at, const std::string &s) {
  uint32_t old;
  std::memcpy(&old, &h[at], 4);
  uint32_t n = uint32_t(s.size());
  std::string bytes(reinterpret_cast<const char *>(&n), 4);
  h.replace(at, 4 + size_t(old), bytes + s);
}

void addToCount(std::string &h, size_t at, int32_t delta) {
  uint32_t n;
  std::memcpy(&n, &h[at], 4);
  n += uint32_t(delta);
  std::memcpy(&h[at], &n, 4);
}

const char *mutateField(Rng &rng, Image &img, const Layout &l) {
  // Strings and numbers alike, but numbers more often.
  const Field &f = l.fields[pick(rng, l.fields.size())];
  int64_t numValues = int64_t(l.valueTypes.size());
  switch (f.kind) {
  case Kind::String: {
    std::vector<std::string> options = candidates(f.role);
    for (const std::string &s : l.strings[size_t(f.role)])
      options.push_back(s);
    replaceString(img.header, f.offset, options[pick(rng, options.size())]);
    return "string";
  }
  case Kind::Enum8:
    writeInt(img.header, f,
             chance(rng, 8) ? int64_t(pick(rng, 256)) : int64_t(pick(rng, 12)));
    return "enum";
  case Kind::F64: {
    double v;
    std::memcpy(&v, &img.header[f.offset], 8);
    v = interestingDouble(rng, v);
    std::memcpy(&img.header[f.offset], &v, 8);
    return "float";
  }
  case Kind::Id32:
    // Mostly another valid id: a wrong wire, not just an out-of-range one.
    writeInt(img.header, f,
             chance(rng, 3)
                 ? interestingInt(rng, readInt(img.header, f), numValues)
                 : int64_t(pick(rng, uint64_t(numValues) + 1)) - 1);
    return "id";
  case Kind::U64: {
    uint64_t v;
    std::memcpy(&v, &img.header[f.offset], 8);
    static const int64_t deltas[] = {1, -1, 64, -64, 4, 2};
    v = chance(rng, 2) ? v + uint64_t(pickOf(rng, deltas))
                       : uint64_t(interestingInt(rng, int64_t(v), 0));
    std::memcpy(&img.header[f.offset], &v, 8);
    return "offset";
  }
  default:
    writeInt(img.header, f,
             interestingInt(rng, readInt(img.header, f), numValues));
    return f.kind == Kind::Dim64 ? "dim" : "int";
  }
}

const char *mutateList(Rng &rng, Image &img, const Layout &l) {
  const List &list = l.lists[pick(rng, l.lists.size())];
  uint32_t n;
  std::memcpy(&n, &img.header[list.countOffset], 4);
  size_t first = list.countOffset + 4;
  if (n > 0 && chance(rng, 2)) {
    size_t at = first + pick(rng, n) * list.elemSize;
    img.header.erase(at, list.elemSize);
    addToCount(img.header, list.countOffset, -1);
    return "list-remove";
  }
  // Insert a copy of an element (or -1 / 0 into an empty list).
  std::string elem(list.elemSize, '\0');
  if (n > 0)
    elem =
        img.header.substr(first + pick(rng, n) * list.elemSize, list.elemSize);
  else if (list.kind == Kind::Id32 || list.kind == Kind::Dim64)
    elem.assign(list.elemSize, char(0xff));
  img.header.insert(first + pick(rng, n + 1) * list.elemSize, elem);
  addToCount(img.header, list.countOffset, 1);
  return "list-insert";
}

const char *mutateRecords(Rng &rng, Image &img, const Layout &l) {
  const Records &r = l.records[pick(rng, l.records.size())];
  if (r.spans.empty())
    return nullptr;
  auto [begin, end] = r.spans[pick(rng, r.spans.size())];
  if (chance(rng, 2)) {
    img.header.erase(begin, end - begin);
    addToCount(img.header, r.countOffset, -1);
    return "record-remove";
  }
  std::string copy = img.header.substr(begin, end - begin);
  img.header.insert(chance(rng, 2) ? begin : end, copy);
  addToCount(img.header, r.countOffset, 1);
  return "record-duplicate";
}

/// One element (or all) of a constant in the blob: NaN, inf, a huge or
/// negative index, a zero scale.
const char *mutateConstant(Rng &rng, Image &img, const Layout &l) {
  if (l.constants.empty())
    return nullptr;
  const ConstantRef &c = l.constants[pick(rng, l.constants.size())];
  if (c.offset > img.blob.size() || c.bytes > img.blob.size() - c.offset ||
      c.value < 0 || size_t(c.value) >= l.valueTypes.size())
    return nullptr;
  uint8_t type = l.valueTypes[size_t(c.value)];
  size_t size = type == uint8_t(plan::ElemType::F32) ||
                        type == uint8_t(plan::ElemType::I32)
                    ? 4
                : type == uint8_t(plan::ElemType::I64) ? 8
                                                       : 2;
  if (c.bytes < size)
    return nullptr;
  size_t count = c.bytes / size;
  bool all = chance(rng, 4);
  size_t at = pick(rng, count);
  for (size_t i = all ? 0 : at; i < (all ? count : at + 1); ++i) {
    char *p = &img.blob[c.offset + i * size];
    if (type == uint8_t(plan::ElemType::F32)) {
      float v;
      std::memcpy(&v, p, 4);
      v = float(interestingDouble(rng, v));
      std::memcpy(p, &v, 4);
    } else if (size == 4 || size == 8) {
      int64_t v = 0;
      std::memcpy(&v, p, size);
      v = interestingInt(rng, v, 0);
      std::memcpy(p, &v, size);
    } else {
      p[pick(rng, 2)] = char(pick(rng, 256));
    }
  }
  return all ? "constant-fill" : "constant-element";
}

} // namespace

int64_t countPlanFields(const std::string &bytes) {
  Image img;
  Layout l;
  if (!split(bytes, img) || !walkHeader(img.header, l))
    return -1;
  return int64_t(l.fields.size());
}

void resealPlan(std::string &bytes) {
  Image img;
  if (split(bytes, img))
    bytes = join(img);
}

const char *mutatePlan(std::string &bytes, Rng &rng) {
  Image img;
  Layout l;
  bool walks = split(bytes, img) && walkHeader(img.header, l) &&
               !l.fields.empty() && !l.lists.empty();
  uint64_t ticket = pick(rng, 100);
  if (!walks || ticket < 6) {
    // Raw: a few bytes anywhere, the checksums left as they were.
    if (bytes.empty())
      return "raw";
    for (uint64_t n = 1 + pick(rng, 4); n > 0; --n)
      bytes[pick(rng, bytes.size())] ^= char(1 << pick(rng, 8));
    return "raw";
  }
  const char *what = nullptr;
  if (ticket < 14) {
    // Raw inside the header, resealed: framing the walker does not know.
    if (img.header.empty())
      return "raw";
    img.header[pick(rng, img.header.size())] ^= char(1 << pick(rng, 8));
    what = "raw-resealed";
  } else if (ticket < 62) {
    what = mutateField(rng, img, l);
  } else if (ticket < 72) {
    what = mutateList(rng, img, l);
  } else if (ticket < 80) {
    what = mutateRecords(rng, img, l);
  } else if (ticket < 92) {
    what = mutateConstant(rng, img, l);
  } else {
    // The fixed header's own fields, with the metadata hash recomputed
    // half the time (over what the mutated blob offset says it covers).
    static const size_t fields[] = {8, 16, 24, 32, 40};
    size_t at = pickOf(rng, fields);
    store64(bytes, at,
            load64(bytes, at) + uint64_t(int64_t(pick(rng, 129)) - 64));
    if (chance(rng, 2)) {
      store64(bytes, plan::kMetadataHashOffset, 0);
      uint64_t covered = std::min<uint64_t>(load64(bytes, 32), bytes.size());
      store64(bytes, plan::kMetadataHashOffset,
              plan::planHash(bytes.data(), covered));
    }
    return "fixed-header";
  }
  if (!what)
    what = mutateField(rng, img, l);
  bytes = join(img);
  return what;
}

} // namespace folio::fuzz
