//===- StoreWeights.cpp - Linear weights packed into the plan -------------===//

#include "compiler/Plan/StoreWeights.h"

#include "codegen/CPU/DType.h"
#include "codegen/CPU/WeightPack.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

namespace mlir::folio {

namespace plan = ::folio::plan;
namespace cpu = ::folio::cpu;

namespace {

llvm::Error error(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

bool toCpuType(plan::ElemType t, cpu::DType &out) {
  switch (t) {
  case plan::ElemType::F32:
    out = cpu::DType::F32;
    return true;
  case plan::ElemType::BF16:
    out = cpu::DType::BF16;
    return true;
  case plan::ElemType::F16:
    out = cpu::DType::F16;
    return true;
  case plan::ElemType::I8:
    out = cpu::DType::I8;
    return true;
  case plan::ElemType::F8E4M3:
    out = cpu::DType::FP8E4M3;
    return true;
  case plan::ElemType::I4:
    out = cpu::DType::I4;
    return true;
  default:
    return false;
  }
}

plan::ElemType toPlanType(cpu::DType t) {
  switch (t) {
  case cpu::DType::BF16:
    return plan::ElemType::BF16;
  case cpu::DType::F16:
    return plan::ElemType::F16;
  case cpu::DType::I8:
    return plan::ElemType::I8;
  case cpu::DType::FP8E4M3:
    return plan::ElemType::F8E4M3;
  case cpu::DType::I4:
    return plan::ElemType::I4;
  default:
    return plan::ElemType::F32;
  }
}

/// Whether constant `table` ([rows, cols]) holds the same values, bit for
/// bit, as the weight W[n, k] = `weight` (in_out: [k, n]; out_in: [n, k]).
bool sameMatrix(const plan::Plan &p, const plan::Constant &table,
                const plan::Constant &weight, bool inOut) {
  const plan::ValueInfo &tv = p.values[size_t(table.value)];
  const plan::ValueInfo &wv = p.values[size_t(weight.value)];
  cpu::DType tt, wt;
  if (wv.dims.size() != 2 || !toCpuType(tv.type, tt) ||
      !toCpuType(wv.type, wt) || !cpu::isPlainFloat(wt))
    return false;
  const int64_t n = inOut ? wv.dims[1] : wv.dims[0];
  const int64_t k = inOut ? wv.dims[0] : wv.dims[1];
  if (n != tv.dims[0] || k != tv.dims[1])
    return false;
  const uint8_t *a = p.blob.data() + table.offset;
  const uint8_t *b = p.blob.data() + weight.offset;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      float x = cpu::loadAsFloat(a, tt, size_t(r * k + c));
      float y = cpu::loadAsFloat(b, wt, size_t(inOut ? c * n + r : r * k + c));
      if (std::memcmp(&x, &y, 4) != 0)
        return false;
    }
  return true;
}

/// One group to store: the step, its operands, and where their constants
/// are.
struct Group {
  int32_t step = -1, operand = -1, count = 0;
  bool inOut = true;
  std::vector<const plan::Constant *> constants;
};

/// A group's quantized sources seen as W[n, k] (output rows stacked), the
/// layout the kernels read: in_out parts are [K, N], out_in parts [N, K].
class SourceRows {
public:
  SourceRows(std::vector<const QuantizedWeightSource *> parts, bool inOut)
      : parts(std::move(parts)), inOut(inOut) {
    for (const QuantizedWeightSource *q : this->parts) {
      int64_t rows = inOut ? q->cols : q->rows;
      firstRow.push_back(n);
      n += rows;
      k = inOut ? q->rows : q->cols;
    }
  }

  int64_t n = 0, k = 0;

  int bits() const { return parts.front()->bits; }
  bool sameBits() const {
    for (const QuantizedWeightSource *q : parts)
      if (q->bits != bits())
        return false;
    return true;
  }
  /// The elements per scale along k of every part (k: one per row).
  int64_t block() const {
    int64_t b = 0;
    for (const QuantizedWeightSource *q : parts) {
      int64_t pb = std::min(inOut ? q->rowBlock : q->colBlock, k);
      if (b && pb != b)
        return 0;
      b = pb;
    }
    return b;
  }
  /// (code, zero, scale) of W[r, c].
  void at(int64_t r, int64_t c, int &code, int &zero, float &scale) const {
    size_t p = 0;
    while (p + 1 < parts.size() && firstRow[p + 1] <= r)
      ++p;
    const QuantizedWeightSource &q = *parts[p];
    int64_t local = r - firstRow[p];
    int64_t i = inOut ? c : local, j = inOut ? local : c;
    code = q.codes[size_t(i * q.cols + j)];
    zero = q.zeroAt(i, j);
    scale = q.scaleAt(i, j);
  }

private:
  std::vector<const QuantizedWeightSource *> parts;
  bool inOut;
  std::vector<int64_t> firstRow;
};

/// The model's own codes stored as int8: one scale per output row, no zero
/// point. False when the source is not of that form.
bool packSourceInt8(const SourceRows &w, cpu::WeightPacking &out) {
  if (w.bits() != 8)
    return false;
  out = cpu::WeightPacking();
  out.storage = cpu::DType::I8;
  out.n = w.n;
  out.k = w.k;
  out.data.resize(size_t(w.n * w.k));
  out.scales.resize(size_t(w.n));
  for (int64_t r = 0; r < w.n; ++r) {
    int code, zero;
    float scale, rowScale = 0.0f;
    for (int64_t c = 0; c < w.k; ++c) {
      w.at(r, c, code, zero, scale);
      if (c == 0)
        rowScale = scale;
      if (zero != 0 || scale != rowScale || !std::isfinite(scale))
        return false;
      // A negative scale (as symmetric quantizers write to use -128 for
      // the largest magnitude) flips the codes' sign: c * s = -c * -s.
      if (scale < 0 && code == -128)
        return false;
      out.data[size_t(r * w.k + c)] = uint8_t(int8_t(scale < 0 ? -code : code));
    }
    out.scales[size_t(r)] = std::fabs(rowScale);
  }
  return true;
}

/// The model's own codes stored as int4 in groups of `g` along k: one
/// scale and zero per group. Code c (in [-8, 7]) with zero z and scale s
/// stands for (c - z) * s = min + (c + 8) * s with min = (-8 - z) * s, the
/// kernels' (scale, min) form; a negative scale (ONNX Runtime's symmetric
/// int4 quantizer writes them, so that -8 takes the largest magnitude)
/// reverses the codes: (c - z) * s = min + (7 - c) * |s| with
/// min = (z - 7) * |s|. Only |s| and min are rounded (to f16). False
/// when the source is not of that form or a param leaves f16's range.
bool packSourceInt4(const SourceRows &w, int64_t g, cpu::WeightPacking &out) {
  if (w.bits() != 4 || !cpu::isInt4GroupSize(g))
    return false;
  int64_t groups = cpu::int4Groups(w.k, g);
  std::vector<uint8_t> codes(size_t(w.n * w.k));
  std::vector<uint16_t> params(size_t(w.n * groups * 2));
  for (int64_t r = 0; r < w.n; ++r)
    for (int64_t gi = 0; gi < groups; ++gi) {
      int code, zero, groupZero = 0;
      float scale, groupScale = 0.0f;
      for (int64_t c = gi * g; c < std::min(w.k, (gi + 1) * g); ++c) {
        w.at(r, c, code, zero, scale);
        if (c == gi * g) {
          groupScale = scale;
          groupZero = zero;
        }
        if (scale != groupScale || zero != groupZero || code < -8 || code > 7 ||
            !std::isfinite(scale))
          return false;
        codes[size_t(r * w.k + c)] = uint8_t(scale < 0 ? 7 - code : code + 8);
      }
      float step = std::fabs(groupScale);
      float min = groupScale < 0 ? float(groupZero - 7) * step
                                 : float(-8 - groupZero) * step;
      uint16_t scaleH = cpu::floatToF16(step);
      uint16_t minH = cpu::floatToF16(min);
      if (!std::isfinite(cpu::f16ToFloat(scaleH)) ||
          !std::isfinite(cpu::f16ToFloat(minH)))
        return false;
      params[size_t((r * groups + gi) * 2)] = scaleH;
      params[size_t((r * groups + gi) * 2 + 1)] = minH;
    }
  return cpu::packInt4Codes(codes.data(), params.data(), w.n, w.k, g, out).ok();
}

} // namespace

llvm::Expected<std::optional<plan::ElemType>>
parseWeightDtype(const std::string &name) {
  if (name == "none")
    return std::nullopt;
  if (name == "f32")
    return plan::ElemType::F32;
  if (name == "bf16")
    return plan::ElemType::BF16;
  if (name == "f16")
    return plan::ElemType::F16;
  if (name == "int8")
    return plan::ElemType::I8;
  if (name == "fp8_e4m3")
    return plan::ElemType::F8E4M3;
  if (name == "int4")
    return plan::ElemType::I4;
  return error("--weight-dtype '" + name +
               "' is not a weight dtype; supported: " + kSupportedWeightDtypes);
}

const char *weightDtypeName(plan::ElemType type) {
  return type == plan::ElemType::I8 ? "int8" : plan::elemTypeName(type);
}

llvm::Expected<int64_t>
resolveWeightGroupSize(std::optional<plan::ElemType> type, int64_t groupSize) {
  bool int4 = type && *type == plan::ElemType::I4;
  if (!int4) {
    if (groupSize != 0)
      return error(std::string("--weight-group-size applies to --weight-dtype "
                               "int4 only, not ") +
                   (type ? weightDtypeName(*type) : "none") +
                   " (int8 and fp8_e4m3 scale per output channel)");
    return 0;
  }
  if (groupSize == 0)
    return cpu::kDefaultInt4GroupSize;
  if (!cpu::isInt4GroupSize(groupSize))
    return error("--weight-group-size " + std::to_string(groupSize) +
                 " is not an int4 group size; supported: 32, 64, 128");
  return groupSize;
}

llvm::Expected<plan::ElemType> parseInt4Activations(const std::string &name) {
  if (name == "f32")
    return plan::ElemType::F32;
  if (name == "int8")
    return plan::ElemType::I8;
  return error("--int4-activations '" + name +
               "' is not an activation dtype; supported: f32, int8");
}

llvm::Error storePackedWeights(plan::Plan &p,
                               const StoreWeightsOptions &options) {
  plan::ElemType type = options.type;
  int64_t groupSize = options.groupSize;
  cpu::DType storage;
  if (!toCpuType(type, storage))
    return error(std::string("cannot store weights as ") +
                 plan::elemTypeName(type) +
                 "; supported: " + kSupportedWeightDtypes);
  llvm::Expected<int64_t> group = resolveWeightGroupSize(type, groupSize);
  if (!group)
    return group.takeError();
  std::vector<const plan::Constant *> constantOf(p.values.size(), nullptr);
  for (const plan::Constant &c : p.constants)
    constantOf[size_t(c.value)] = &c;
  std::vector<const QuantizedWeightSource *> sourceOf(p.values.size(), nullptr);
  if (options.sources)
    for (const QuantizedWeightSource &q : *options.sources)
      if (q.value >= 0 && size_t(q.value) < p.values.size())
        sourceOf[size_t(q.value)] = &q;
  // How many reads each value has outside the groups stored below: a
  // constant nothing else reads leaves the blob.
  std::vector<int64_t> reads(p.values.size(), 0);
  auto countReads = [&](const std::vector<plan::Step> &steps) {
    for (const plan::Step &s : steps)
      for (int32_t id : s.operands)
        if (id >= 0)
          ++reads[size_t(id)];
  };
  countReads(p.steps);
  for (const plan::Entry &e : p.entries)
    countReads(e.steps);
  for (int32_t id : p.outputs)
    ++reads[size_t(id)];

  std::vector<Group> groups;
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const plan::Step &s = p.steps[si];
    std::string layout = s.getString("weight_layout", "in_out");
    for (auto [first, count] : plan::linearWeightGroups(s)) {
      if (s.operands.size() < size_t(first + count))
        continue;
      Group g{int32_t(si), first, count, layout == "in_out", {}};
      for (int32_t j = 0; j < count; ++j) {
        int32_t id = s.operands[size_t(first + j)];
        const plan::Constant *c = id >= 0 ? constantOf[size_t(id)] : nullptr;
        cpu::DType t;
        // Only constant float matrices; anything else stays with the
        // executor, which checks it as before.
        if (!c || p.values[size_t(id)].dims.size() != 2 ||
            !toCpuType(p.values[size_t(id)].type, t) || !cpu::isPlainFloat(t)) {
          g.constants.clear();
          break;
        }
        g.constants.push_back(c);
      }
      if (g.constants.empty())
        continue;
      for (int32_t j = 0; j < count; ++j)
        --reads[size_t(s.operands[size_t(first + j)])];
      groups.push_back(std::move(g));
    }
  }

  // Embedding tables (operand 0 of `embedding` steps) read by nothing else
  // are stored 16-bit with the weights: bf16, or f16 for f16 weights; f32
  // weights keep them f32. The lookup widens one row per token, so this
  // halves the bytes the plan maps without a conversion at load.
  std::vector<int64_t> tableReads(p.values.size(), 0);
  auto countTableReads = [&](const std::vector<plan::Step> &steps) {
    for (const plan::Step &s : steps)
      if (s.kind == "embedding" && !s.operands.empty() && s.operands[0] >= 0)
        ++tableReads[size_t(s.operands[0])];
  };
  countTableReads(p.steps);
  for (const plan::Entry &e : p.entries)
    countTableReads(e.steps);
  plan::ElemType tableType = type == plan::ElemType::F32 ? type
                             : type == plan::ElemType::F16
                                 ? type
                                 : plan::ElemType::BF16;

  // A tied table (read by the forward's lookups only) whose lm_head is
  // stored quantized: the lookup reads the lm_head's packing, row `id` of
  // W[vocab, hidden], instead of a 16-bit copy of the same matrix beside
  // the codes (272 MB for a 0.5B Qwen2). The embeddings then carry the
  // weight dtype's rounding, as GGUF's quantized token tables do.
  // tiedGroup[value]: the group whose packing the table's lookups read.
  std::vector<int32_t> tiedGroup(p.values.size(), -1);
  const bool quantized = storage == cpu::DType::I8 ||
                         storage == cpu::DType::FP8E4M3 ||
                         storage == cpu::DType::I4;
  if (quantized && options.shareTiedTables) {
    std::vector<int64_t> entryReads(p.values.size(), 0);
    for (const plan::Entry &e : p.entries)
      for (const plan::Step &s : e.steps)
        for (int32_t id : s.operands)
          if (id >= 0)
            ++entryReads[size_t(id)];
    for (const plan::Constant &c : p.constants) {
      const size_t id = size_t(c.value);
      const plan::ValueInfo &v = p.values[id];
      cpu::DType t;
      if (reads[id] <= 0 || reads[id] != tableReads[id] || entryReads[id] ||
          v.dims.size() != 2 || !toCpuType(v.type, t) || !cpu::isPlainFloat(t))
        continue;
      for (size_t gi = 0; gi < groups.size() && tiedGroup[id] < 0; ++gi)
        if (groups[gi].count == 1 &&
            sameMatrix(p, c, *groups[gi].constants[0], groups[gi].inOut))
          tiedGroup[id] = int32_t(gi);
    }
  }

  // A fresh blob: the constants still read, then the packed weights.
  plan::Blob blob;
  std::vector<plan::Constant> kept;
  std::vector<uint16_t> narrow;
  for (const plan::Constant &c : p.constants) {
    if (reads[size_t(c.value)] <= 0 || tiedGroup[size_t(c.value)] >= 0)
      continue;
    plan::Constant moved = c;
    plan::ValueInfo &v = p.values[size_t(c.value)];
    if (tableType != plan::ElemType::F32 && v.type == plan::ElemType::F32 &&
        v.dims.size() == 2 &&
        reads[size_t(c.value)] == tableReads[size_t(c.value)] &&
        c.bytes % 4 == 0) {
      const uint8_t *src = p.blob.data() + c.offset;
      narrow.resize(size_t(c.bytes / 4));
      for (size_t i = 0; i < narrow.size(); ++i) {
        float x;
        std::memcpy(&x, src + i * 4, 4);
        narrow[i] = tableType == plan::ElemType::F16 ? cpu::floatToF16(x)
                                                     : cpu::floatToBf16(x);
      }
      moved.bytes = narrow.size() * 2;
      moved.offset = blob.append(narrow.data(), moved.bytes);
      v.type = tableType;
    } else {
      moved.offset = blob.append(p.blob.data() + c.offset, c.bytes);
    }
    kept.push_back(moved);
  }
  // A group of quantized sources stored from their codes where the dtype
  // holds them exactly (StoreWeightsOptions). `int8Activations`: every
  // part allows int8 activations (QuantizedWeight::int8Activations).
  auto packFromSource = [&](const Group &g, cpu::WeightPacking &out,
                            bool &int8Activations) {
    std::vector<const QuantizedWeightSource *> parts;
    int8Activations = true;
    for (const plan::Constant *c : g.constants) {
      const QuantizedWeightSource *q = sourceOf[size_t(c->value)];
      if (!q)
        return false;
      parts.push_back(q);
      int8Activations = int8Activations && q->int8Activations;
    }
    SourceRows w(std::move(parts), g.inOut);
    if (!w.sameBits())
      return false;
    // int4 groups: the one asked for, else the source's own block (one
    // scale per row fits any), else the default.
    int64_t block = w.block();
    int64_t int4Group = groupSize                     ? groupSize
                        : cpu::isInt4GroupSize(block) ? block
                        : block == w.k && w.k > 0 ? cpu::kDefaultInt4GroupSize
                                                  : 0;
    if (options.keepSourceQuantization)
      return packSourceInt4(w, int4Group, out) || packSourceInt8(w, out);
    if (storage == cpu::DType::I4)
      return packSourceInt4(w, int4Group, out);
    if (storage == cpu::DType::I8)
      return packSourceInt8(w, out);
    return false;
  };
  // A tied embedding's table (kept for the lookup, 16-bit or f32) and its
  // lm_head packed in the same dtype are the same bytes, [vocab, hidden]
  // rows rounded the same way: the weight then points at the table's
  // bytes rather than storing them twice. Compared byte for byte, so
  // nothing else is ever shared.
  auto sameBytes = [&](const void *data,
                       uint64_t bytes) -> std::optional<uint64_t> {
    for (const plan::Constant &c : kept)
      if (bytes && c.bytes == bytes &&
          std::memcmp(blob.data() + c.offset, data, bytes) == 0)
        return c.offset;
    return std::nullopt;
  };
  std::vector<plan::StoredWeight> stored;
  std::vector<float> rows;
  for (const Group &g : groups) {
    const plan::Step &s = p.steps[size_t(g.step)];
    // A step raised from several ONNX nodes (a gated MLP) has no node name.
    const std::string where =
        s.kind + (s.name.empty() ? " (plan step " + std::to_string(g.step) + ")"
                                 : " '" + s.name + "'");
    int64_t n = 0, k = 0;
    for (const plan::Constant *c : g.constants) {
      const plan::ValueInfo &v = p.values[size_t(c->value)];
      k = g.inOut ? v.dims[0] : v.dims[1];
      n += g.inOut ? v.dims[1] : v.dims[0];
    }
    rows.assign(size_t(n * k), 0.0f);
    int64_t row0 = 0;
    for (const plan::Constant *c : g.constants) {
      const plan::ValueInfo &v = p.values[size_t(c->value)];
      cpu::DType t = cpu::DType::F32;
      toCpuType(v.type, t); // checked when the group was formed
      const uint8_t *src = p.blob.data() + c->offset;
      int64_t r = v.dims[0], cols = v.dims[1];
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          float x = cpu::loadAsFloat(src, t, size_t(i * cols + j));
          // in_out is [K, N]: element (i, j) is row j of W[N, K].
          if (g.inOut)
            rows[size_t((row0 + j) * k + i)] = x;
          else
            rows[size_t((row0 + i) * k + j)] = x;
        }
      row0 += g.inOut ? cols : r;
    }
    cpu::WeightPacking packing;
    bool sourceInt8Activations = false;
    const bool fromSource = packFromSource(g, packing, sourceInt8Activations);
    if (!fromSource) {
      const float *inputs = nullptr;
      if (options.inputAbsMax && storage == cpu::DType::I8) {
        auto it = options.inputAbsMax->find({g.step, g.operand});
        if (it != options.inputAbsMax->end()) {
          if (int64_t(it->second.size()) != k)
            return error(where + ": operand " + std::to_string(g.operand) +
                         ": the calibration "
                         "recorded " +
                         std::to_string(it->second.size()) +
                         " input columns for a weight of " + std::to_string(k) +
                         " (a plan compiled otherwise)");
          inputs = it->second.data();
        }
      }
      cpu::Status st = cpu::packWeightRows(rows.data(), n, k, storage, packing,
                                           *group, inputs);
      if (!st.ok())
        return error(where + ": operand " + std::to_string(g.operand) +
                     " (weight " + std::to_string(n) + " x " +
                     std::to_string(k) +
                     ", out x in features): " + st.message());
    }
    plan::StoredWeight w;
    w.step = g.step;
    w.operand = g.operand;
    w.numOperands = g.count;
    w.type = toPlanType(packing.storage);
    w.layout = packing.storage != cpu::DType::I4 ? plan::WeightLayout::RowsNK
               : packing.groupSize == 32         ? plan::WeightLayout::Int4G32
               : packing.groupSize == 64         ? plan::WeightLayout::Int4G64
                                                 : plan::WeightLayout::Int4G128;
    if (packing.storage == cpu::DType::I4)
      w.activations = options.int4Activations.value_or(
          type == plan::ElemType::I4 || (fromSource && sourceInt8Activations)
              ? plan::ElemType::I8
              : plan::ElemType::F32);
    w.n = n;
    w.k = k;
    w.dataBytes = packing.data.size();
    if (std::optional<uint64_t> shared =
            sameBytes(packing.data.data(), w.dataBytes))
      w.dataOffset = *shared;
    else
      w.dataOffset = blob.append(packing.data.data(), w.dataBytes);
    if (packing.storage == cpu::DType::FP8E4M3) {
      w.scalesBytes = packing.scales.size() * 4;
      w.scalesOffset = blob.append(packing.scales.data(), w.scalesBytes);
    }
    if (packing.storage == cpu::DType::I4) {
      // The f16 (scale, min) pairs, in the scales range.
      w.scalesBytes = packing.groupParams.size() * 2;
      w.scalesOffset = blob.append(packing.groupParams.data(), w.scalesBytes);
    }
    if (packing.storage == cpu::DType::I8) {
      w.numOutliers = int64_t(packing.outlierCols.size());
      w.scalesBytes = packing.scales.size() * 4;
      w.scalesOffset = blob.append(packing.scales.data(), w.scalesBytes);
      if (w.numOutliers) {
        w.outlierColsBytes = packing.outlierCols.size() * 4;
        w.outlierColsOffset =
            blob.append(packing.outlierCols.data(), w.outlierColsBytes);
        w.outliersBytes = packing.outliers.size() * 2;
        w.outliersOffset =
            blob.append(packing.outliers.data(), w.outliersBytes);
      }
    }
    stored.push_back(w);
    // The lookups of a table tied to this group read the same ranges.
    for (size_t id = 0; id < tiedGroup.size(); ++id) {
      if (tiedGroup[id] != int32_t(&g - groups.data()))
        continue;
      for (size_t si = 0; si < p.steps.size(); ++si) {
        const plan::Step &e = p.steps[si];
        if (e.kind != "embedding" || e.operands.empty() ||
            e.operands[0] != int32_t(id))
          continue;
        plan::StoredWeight lookup = w;
        lookup.step = int32_t(si);
        lookup.operand = 0;
        lookup.numOperands = 1;
        // A lookup rounds nothing: its "activations" are token ids.
        lookup.activations = plan::ElemType::F32;
        stored.push_back(lookup);
      }
    }
  }
  p.constants = std::move(kept);
  p.weights = std::move(stored);
  p.blob = std::move(blob);
  return llvm::Error::success();
}

} // namespace mlir::folio
