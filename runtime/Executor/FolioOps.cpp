//===- FolioOps.cpp - folio ops on the codegen/CPU kernels ----------------===//
//
// Each folio op maps onto one FolioCPUKernels call (or three, for the gated
// MLP). Weights the compiler stored packed (Plan::weights) are bound in
// place in `prepare`; others are packed there once. Leading dims of the
// batch x seq layout page-kv leaves are flattened into rows.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Activation.h"
#include "codegen/CPU/Gather.h"
#include "codegen/CPU/Linear.h"
#include "codegen/CPU/Norm.h"
#include "codegen/CPU/PagedAttention.h"
#include "codegen/CPU/Rotary.h"
#include "runtime/Executor/RotaryStep.h"
#include "runtime/Executor/StepKernel.h"
#include "runtime/Executor/StoredWeightView.h"
#include "runtime/Plan/KernelDType.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace folio::exec {
namespace {

Status prepareError(const PrepareContext &ctx, const std::string &message) {
  return Status::invalidArgument(ctx.step.kind + " '" + ctx.step.name +
                                 "': " + message);
}

/// The kernel library's type for a float plan element type (f32, bf16,
/// f16).
bool toCpuType(ElemType t, cpu::DType &out) {
  return isTensorElemType(t) && plan::kernelDType(t, out);
}

/// to[c, r] = from[r, c] for a rows x cols matrix, in 64 x 64 tiles: an
/// element-at-a-time transpose walks `to` a whole row apart per element,
/// and packing the 110M model's [K, N] weights that way took ~16 % of a
/// short folio-bench run (perf).
template <typename T>
void transposeBlocked(const T *from, int64_t rows, int64_t cols, T *to) {
  constexpr int64_t kTile = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r)
          to[c * rows + r] = from[r * cols + c];
    }
}

/// Packs constant 2-D weights (f32, bf16 or f16 in the plan) into the
/// kernel's W[N, K] layout, stored as ctx.weightStorage. Several weights
/// (same K and type) are stacked along N into one, so one GEMM or one GEMV
/// stream does their work; a single [N, K] weight is borrowed. `weights`
/// (gate and up of a gated MLP); errors name ctx.step.
Status packWeights(const PrepareContext &ctx,
                   const std::vector<const Tensor *> &weights, int32_t biasOp,
                   bool inOut, cpu::PackedWeight &out,
                   bool gatedHalves = false) {
  cpu::DType src = cpu::DType::F32;
  int64_t n = 0, k = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor &w = *weights[i];
    cpu::DType type;
    if (!w.data || w.rank() != 2 || !toCpuType(w.type, type))
      return prepareError(ctx, "weight " + std::to_string(i + 1) +
                                   " must be a constant 2-D float tensor");
    int64_t wk = inOut ? w.shape[0] : w.shape[1];
    if (k >= 0 && (wk != k || type != src))
      return prepareError(ctx, "stacked weights differ in type or in size");
    src = type;
    k = wk;
    n += inOut ? w.shape[1] : w.shape[0];
  }
  const float *bias = nullptr;
  if (biasOp >= 0) {
    const Tensor &b = ctx.values[size_t(biasOp)];
    if (!b.data || b.type != ElemType::F32 || b.numel() != n)
      return prepareError(ctx, "bias must be a constant f32 tensor of " +
                                   std::to_string(n) +
                                   " elements (the "
                                   "weight's output features), not " +
                                   shapeString(b.shape));
    bias = b.as<float>();
  }
  // f16 storage is not an option for the GEMM (oneDNN 2.6 has no f16
  // matmul): anything narrower than f32 is stored bf16.
  cpu::DType storage = ctx.weightStorage;
  cpu::Status s = cpu::Status::success();
  if (!inOut && weights.size() == 1) {
    s = cpu::PackedWeight::pack(weights[0]->data, src, n, k, bias, storage, out,
                                /*borrow=*/true);
    return s.ok() ? Status::ok() : prepareError(ctx, s.message());
  }
  size_t es = cpu::dtypeSize(src);
  std::vector<uint8_t> t(size_t(n * k) * es);
  uint8_t *to = t.data();
  for (const Tensor *wp : weights) {
    const Tensor &w = *wp;
    const uint8_t *from = static_cast<const uint8_t *>(w.data);
    int64_t rows = inOut ? w.shape[1] : w.shape[0];
    if (inOut) {
      if (es == 4)
        transposeBlocked(reinterpret_cast<const uint32_t *>(from), k, rows,
                         reinterpret_cast<uint32_t *>(to));
      else
        transposeBlocked(reinterpret_cast<const uint16_t *>(from), k, rows,
                         reinterpret_cast<uint16_t *>(to));
    } else {
      std::memcpy(to, from, size_t(rows * k) * es);
    }
    to += size_t(rows * k) * es;
  }
  s = cpu::PackedWeight::pack(t.data(), src, n, k, bias, storage, out,
                              /*borrow=*/false, gatedHalves);
  return s.ok() ? Status::ok() : prepareError(ctx, s.message());
}

/// The weight the compiler stored packed for operand `operand` (onwards)
/// of ctx.step, or null.
const plan::StoredWeight *storedWeight(const PrepareContext &ctx,
                                       size_t operand) {
  const plan::Step *first = ctx.plan.steps.data();
  if (&ctx.step < first || &ctx.step >= first + ctx.plan.steps.size())
    return nullptr;
  return ctx.plan.findStoredWeight(int32_t(&ctx.step - first),
                                   int32_t(operand));
}

/// storedWeightView, its error naming the step.
Status stepWeightView(const PrepareContext &ctx, const plan::StoredWeight &w,
                      cpu::WeightView &v) {
  if (Status s = storedWeightView(ctx.plan, w, v); !s)
    return prepareError(ctx, s.message());
  return Status::ok();
}

/// Points `out` at a stored weight's bytes (StoredWeightView.h).
Status bindStoredWeight(const PrepareContext &ctx, const plan::StoredWeight &w,
                        int32_t biasOp, cpu::PackedWeight &out,
                        bool gatedHalves) {
  cpu::WeightView v;
  if (Status s = stepWeightView(ctx, w, v); !s)
    return s;
  const float *bias = nullptr;
  if (biasOp >= 0) {
    const Tensor &b = ctx.values[size_t(biasOp)];
    if (!b.data || b.type != ElemType::F32 || b.numel() != w.n)
      return prepareError(ctx, "bias must be a constant f32 tensor of " +
                                   std::to_string(w.n) +
                                   " elements (the weight's output features), "
                                   "not " +
                                   shapeString(b.shape));
    bias = b.as<float>();
  }
  cpu::Status s = cpu::PackedWeight::fromView(v, bias, out, gatedHalves);
  return s.ok() ? Status::ok() : prepareError(ctx, s.message());
}

/// packWeights over operands of ctx.step, or the weight the compiler stored
/// for them.
Status packWeight(const PrepareContext &ctx,
                  std::initializer_list<size_t> operands, int32_t biasOp,
                  bool inOut, cpu::PackedWeight &out,
                  bool gatedHalves = false) {
  if (const plan::StoredWeight *w = storedWeight(ctx, *operands.begin())) {
    if (size_t(w->numOperands) != operands.size())
      return prepareError(ctx, "the stored weight stands for " +
                                   std::to_string(w->numOperands) +
                                   " operands, the kernel reads " +
                                   std::to_string(operands.size()));
    return bindStoredWeight(ctx, *w, biasOp, out, gatedHalves);
  }
  std::vector<const Tensor *> weights;
  for (size_t operand : operands)
    weights.push_back(&ctx.values[size_t(ctx.step.operands[operand])]);
  return packWeights(ctx, weights, biasOp, inOut, out, gatedHalves);
}

/// The step's weight layout: in_out ([K, N], as ONNX MatMul) or out_in
/// ([N, K]); any other spelling is a corrupt plan, not a layout.
Status weightLayout(const PrepareContext &ctx, bool &inOut) {
  std::string layout = ctx.step.getString("weight_layout", "in_out");
  if (layout != "in_out" && layout != "out_in")
    return prepareError(ctx, "weight_layout '" + layout +
                                 "' is not a weight layout (in_out, out_in)");
  inOut = layout == "in_out";
  return Status::ok();
}

struct LinearState : WeightState {
  cpu::PackedWeight w;
  int64_t weightBytes() const override { return int64_t(w.weightBytes()); }
};

Status prepareLinear(const PrepareContext &ctx,
                     std::unique_ptr<StepState> &state) {
  auto st = std::make_unique<LinearState>();
  int32_t bias = ctx.step.operands.size() > 2 ? ctx.step.operands[2] : -1;
  bool inOut = true;
  if (Status s = weightLayout(ctx, inOut); !s)
    return s;
  if (Status s = packWeight(ctx, {1}, bias, inOut, st->w); !s)
    return s;
  state = std::move(st);
  return Status::ok();
}

/// Output shape of a row-wise op: the input's leading dims plus `last`.
Shape withLast(const Shape &s, int64_t last) {
  Shape out = s;
  out.back() = last;
  return out;
}

Status checkRows(const StepContext &ctx, const Tensor &x, int64_t k) {
  if (x.type != ElemType::F32 || x.rank() < 1 || x.shape.back() != k)
    return ctx.error("input " + shapeString(x.shape) +
                     " must be f32 with last dim " + std::to_string(k));
  return Status::ok();
}

Status runLinear(StepContext &ctx) {
  auto &w = static_cast<LinearState *>(ctx.state)->w;
  const Tensor &x = ctx.in(0);
  if (Status s = checkRows(ctx, x, w.inFeatures()); !s)
    return s;
  // linear writes every element (GEMV and oneDNN alike): no zero fill.
  Tensor y = ctx.output(0, ElemType::F32, withLast(x.shape, w.outFeatures()));
  int64_t rows = x.numel() / w.inFeatures();
  ctx.flops += 2.0 * double(rows) * double(w.inFeatures() * w.outFeatures());
  if (ctx.linearInputs)
    ctx.linearInputs->record(ctx.stepIndex, 1, x.as<float>(), rows,
                             w.inFeatures());
  if (Status s = fromCpu(
          ctx, cpu::linear(x.as<float>(), rows, w, y.as<float>(), ctx.pool));
      !s)
    return s;
  ctx.setResult(0, std::move(y));
  return Status::ok();
}

/// Gate and up stacked into one [2F, K] weight: one GEMM with N = 2F for
/// prefill, one GEMV stream for decode (a second stream restarts the
/// prefetchers, a second GEMM re-reads x); the activation then reads the two
/// halves of each output row.
struct GatedMLPState : WeightState {
  cpu::PackedWeight gateUp, down;
  cpu::Activation act = cpu::Activation::Silu;
  int64_t ffn = 0;
  int64_t weightBytes() const override {
    return int64_t(gateUp.weightBytes() + down.weightBytes());
  }
};

Status prepareGatedMLP(const PrepareContext &ctx,
                       std::unique_ptr<StepState> &state) {
  auto st = std::make_unique<GatedMLPState>();
  std::string act = ctx.step.getString("activation", "silu");
  if (act == "silu")
    st->act = cpu::Activation::Silu;
  else if (act == "gelu")
    st->act = cpu::Activation::GeluErf;
  else if (act == "gelu_tanh")
    st->act = cpu::Activation::GeluTanh;
  else
    return prepareError(ctx, "activation '" + act +
                                 "' is not supported (silu, gelu, gelu_tanh)");
  bool inOut = true;
  if (Status s = weightLayout(ctx, inOut); !s)
    return s;
  // Stored weights were checked with the plan (the same rule).
  const Tensor &gate = ctx.values[size_t(ctx.step.operands[1])];
  const Tensor &up = ctx.values[size_t(ctx.step.operands[2])];
  if (!storedWeight(ctx, 1) && (gate.rank() != 2 || gate.shape != up.shape))
    return prepareError(ctx, "gate and up weights disagree in shape");
  if (Status s = packWeight(ctx, {1, 2}, -1, inOut, st->gateUp,
                            /*gatedHalves=*/true);
      !s)
    return s;
  if (Status s = packWeight(ctx, {3}, -1, inOut, st->down); !s)
    return s;
  st->ffn = st->gateUp.outFeatures() / 2;
  if (st->down.inFeatures() != st->ffn)
    return prepareError(ctx, "gate, up and down weights disagree in size");
  state = std::move(st);
  return Status::ok();
}

Status runGatedMLP(StepContext &ctx) {
  auto *st = static_cast<GatedMLPState *>(ctx.state);
  const Tensor &x = ctx.in(0);
  int64_t k = st->gateUp.inFeatures();
  if (Status s = checkRows(ctx, x, k); !s)
    return s;
  int64_t rows = x.numel() / k;
  int64_t f = st->ffn;
  ctx.flops += 2.0 * double(rows) * 3.0 * double(f * k);
  // Both are written whole. gatedLinear never materialises the [rows, 2F]
  // gate/up product on oneDNN's tiles (prefill), and otherwise keeps it in
  // its own scratch.
  Tensor h = Tensor::empty(ElemType::F32, {rows, f});
  Tensor y =
      ctx.output(0, ElemType::F32, withLast(x.shape, st->down.outFeatures()));
  if (ctx.linearInputs)
    ctx.linearInputs->record(ctx.stepIndex, 1, x.as<float>(), rows, k);
  cpu::Status s = cpu::gatedLinear(x.as<float>(), rows, st->gateUp, st->act,
                                   h.as<float>(), ctx.pool);
  if (s.ok() && ctx.linearInputs)
    ctx.linearInputs->record(ctx.stepIndex, 3, h.as<float>(), rows, f);
  if (s.ok())
    s = cpu::linear(h.as<float>(), rows, st->down, y.as<float>(), ctx.pool);
  if (!s.ok())
    return fromCpu(ctx, s);
  ctx.setResult(0, std::move(y));
  return Status::ok();
}

/// Integer ids as int32 (the kernels' index type), range-checked.
Status toInt32(const StepContext &ctx, const Tensor &t,
               std::vector<int32_t> &out) {
  if (t.type != ElemType::I64 && t.type != ElemType::I32)
    return ctx.error("indices must be integers");
  out.resize(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = t.intAt(i);
    if (v < INT32_MIN || v > INT32_MAX)
      return ctx.error("index " + std::to_string(v) + " overflows int32");
    out[size_t(i)] = int32_t(v);
  }
  return Status::ok();
}

/// An embedding table the compiler stored as its tied lm_head's packing
/// (StoreWeightsOptions::shareTiedTables): the lookup widens packed rows.
struct PackedTableState : StepState {
  cpu::WeightView table;
};

Status prepareEmbedding(const PrepareContext &ctx,
                        std::unique_ptr<StepState> &state) {
  const plan::StoredWeight *w = storedWeight(ctx, 0);
  if (!w)
    return Status::ok(); // a constant table, bound per run
  auto st = std::make_unique<PackedTableState>();
  if (Status s = stepWeightView(ctx, *w, st->table); !s)
    return s;
  if (cpu::Status s = cpu::checkWeightView(st->table); !s.ok())
    return prepareError(ctx, s.message());
  state = std::move(st);
  return Status::ok();
}

Status runEmbedding(StepContext &ctx) {
  const cpu::WeightView *packed =
      ctx.state ? &static_cast<PackedTableState *>(ctx.state)->table : nullptr;
  const Tensor &table = ctx.in(0);
  // folioc stores tables bf16 (f16 with f16 weights) unless weights are f32.
  cpu::DType tableType = table.type == ElemType::BF16  ? cpu::DType::BF16
                         : table.type == ElemType::F16 ? cpu::DType::F16
                                                       : cpu::DType::F32;
  if (!packed &&
      ((table.type != ElemType::F32 && table.type != ElemType::BF16 &&
        table.type != ElemType::F16) ||
       table.rank() != 2))
    return ctx.error("table must be a 2-D f32, bf16 or f16 tensor");
  std::vector<int32_t> ids;
  if (Status s = toInt32(ctx, ctx.in(1), ids); !s)
    return s;
  // The table may be a vocabulary or a position table (a learned position
  // embedding indexed by positions), so the message names rows, not tokens;
  // the engines refuse contexts past max_positions before any forward.
  int64_t rows = packed ? packed->n : table.shape[0];
  int64_t dim = packed ? packed->k : table.shape[1];
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= rows)
      return ctx.error("index " + std::to_string(ids[i]) + " (element " +
                       std::to_string(i) + " of the indices) is outside the " +
                       "table's " + std::to_string(rows) + " rows [0, " +
                       std::to_string(rows) + ")");
  Shape shape = ctx.in(1).shape;
  shape.push_back(dim);
  Tensor out = ctx.output(0, ElemType::F32, shape); // every row written
  const float scale = float(ctx.step.getFloat("scale", 1.0));
  const int64_t n = int64_t(ids.size());
  if (Status s = fromCpu(
          ctx, packed
                   ? cpu::embeddingRows(ids.data(), n, *packed, out.as<float>(),
                                        scale, ctx.pool)
                   : cpu::embedding(ids.data(), n, table.data, tableType, rows,
                                    dim, out.as<float>(), scale, ctx.pool));
      !s)
    return s;
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

Status runRMSNorm(StepContext &ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  int64_t d = w.numel();
  if (Status s = checkRows(ctx, x, d); !s)
    return s;
  Tensor y = ctx.output(0, ElemType::F32, x.shape);
  if (Status s = fromCpu(
          ctx, cpu::rmsNorm(
                   x.as<float>(), w.as<float>(), y.as<float>(), x.numel() / d,
                   d, float(ctx.step.getFloat("epsilon", 1e-5)),
                   float(ctx.step.getFloat("weight_offset", 0.0)), ctx.pool));
      !s)
    return s;
  ctx.setResult(0, std::move(y));
  return Status::ok();
}

Status runLayerNorm(StepContext &ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  int64_t d = w.numel();
  if (Status s = checkRows(ctx, x, d); !s)
    return s;
  const float *bias = nullptr;
  if (ctx.has(2)) {
    const Tensor &b = ctx.in(2);
    if (b.type != ElemType::F32 || b.numel() != d)
      return ctx.error("the bias is " +
                       std::string(plan::elemTypeName(b.type)) + " " +
                       shapeString(b.shape) + "; layer_norm needs f32 [" +
                       std::to_string(d) + "], the size of its weight");
    bias = b.as<float>();
  }
  Tensor y = ctx.output(0, ElemType::F32, x.shape); // every row written
  if (Status s =
          fromCpu(ctx, cpu::layerNorm(x.as<float>(), w.as<float>(), bias,
                                      y.as<float>(), x.numel() / d, d,
                                      float(ctx.step.getFloat("epsilon", 1e-5)),
                                      ctx.pool));
      !s)
    return s;
  ctx.setResult(0, std::move(y));
  return Status::ok();
}

struct RotaryState : StepState {
  cpu::RotaryParams params;
  std::vector<float> invFreq;
};

Status prepareRotary(const PrepareContext &ctx,
                     std::unique_ptr<StepState> &state) {
  auto st = std::make_unique<RotaryState>();
  cpu::RotaryParams &p = st->params;
  const plan::ValueInfo &in = ctx.plan.values[size_t(ctx.step.operands[0])];
  if (std::string why =
          rotaryParamsOf(ctx.step, in.dims.empty() ? 0 : in.dims.back(), p);
      !why.empty())
    return prepareError(ctx, why);
  st->invFreq = cpu::rotaryInverseFrequencies(p);
  state = std::move(st);
  return Status::ok();
}

/// Rotates input [T, H, D] (positions [T]) or [B, H, S, D] (positions
/// [B, S]) in the layout it arrives in, with angles from the frequencies or
/// from the model's cos/sin table, so no transpose is needed around it.
Status runRotary(StepContext &ctx) {
  auto *st = static_cast<RotaryState *>(ctx.state);
  const cpu::RotaryParams &p = st->params;
  const Tensor &x = ctx.in(0), &pos = ctx.in(1);
  bool rank4 = x.rank() == 4;
  if (x.type != ElemType::F32 || (x.rank() != 3 && !rank4) ||
      x.shape.back() != p.headDim)
    return ctx.error("input " + shapeString(x.shape) +
                     " must be f32 [T, H, D] or [B, H, S, D] with D = " +
                     std::to_string(p.headDim));
  // Viewed as [b, h, s, D]: [B, H, S, D], or [T, H, 1, D] for rank 3.
  int64_t b = x.shape[0], h = x.shape[1], s = rank4 ? x.shape[2] : 1;
  if (pos.numel() != b * s ||
      (pos.type != ElemType::I64 && pos.type != ElemType::I32))
    return ctx.error("positions " + shapeString(pos.shape) +
                     " do not match input " + shapeString(x.shape));
  const Tensor *table = ctx.has(2) ? &ctx.in(2) : nullptr;
  if (table && (table->type != ElemType::F32 || table->rank() != 2 ||
                table->shape[1] != p.rotaryDim))
    return ctx.error("cos_sin_cache must be [positions, rotary_dim]");
  std::vector<int64_t> converted;
  const int64_t *positions = pos.as<int64_t>();
  if (pos.type != ElemType::I64) {
    converted = pos.ints();
    positions = converted.data();
  }
  Tensor y = ctx.output(0, ElemType::F32, x.shape);
  if (Status status = fromCpu(
          ctx,
          cpu::applyRotaryRows(x.as<float>(), y.as<float>(), b, h, s, positions,
                               table ? table->as<float>() : nullptr,
                               table ? table->shape[0] : 0, p, ctx.pool));
      !status)
    return status;
  ctx.setResult(0, std::move(y));
  return Status::ok();
}

/// The step's view of its cache: static scales (fp8) come from the step's
/// k_scale / v_scale operands, constants the plan's validation checked.
Status stepCacheView(StepContext &ctx, int cacheOperand, int scaleOperand,
                     cpu::KVCacheView &view) {
  cpu::KVCacheView *cache = ctx.cache(cacheOperand);
  if (!cache)
    return ctx.error("no KV cache is bound to operand " +
                     std::to_string(cacheOperand));
  view = *cache;
  bool has = ctx.has(scaleOperand) && ctx.has(scaleOperand + 1);
  if (!has)
    return Status::ok();
  const Tensor &ks = ctx.in(scaleOperand), &vs = ctx.in(scaleOperand + 1);
  if (ks.type != ElemType::F32 || vs.type != ElemType::F32 ||
      ks.numel() != view.numKvHeads || vs.numel() != view.numKvHeads)
    return ctx.error("k_scale / v_scale must be f32 with one scale per KV "
                     "head (" +
                     std::to_string(view.numKvHeads) + ")");
  view.kScale = ks.as<float>();
  view.vScale = vs.as<float>();
  return Status::ok();
}

Status runKVWrite(StepContext &ctx) {
  cpu::KVCacheView view;
  if (Status s = stepCacheView(ctx, 0, 4, view); !s)
    return s;
  cpu::KVCacheView *cache = &view;
  const Tensor &k = ctx.in(1), &v = ctx.in(2), &slots = ctx.in(3);
  int64_t row = cache->slotElements();
  if (k.type != ElemType::F32 || v.type != ElemType::F32 ||
      k.numel() % std::max<int64_t>(row, 1) != 0 || k.numel() != v.numel())
    return ctx.error("key/value " + shapeString(k.shape) + " / " +
                     shapeString(v.shape) + " do not match the cache");
  int64_t t = k.numel() / row;
  if (slots.numel() != t || slots.type != ElemType::I64)
    return ctx.error("slot_mapping must be i64 with one slot per token");
  return fromCpu(ctx, cpu::kvWrite(*cache, k.as<float>(), row, v.as<float>(),
                                   row, slots.as<int64_t>(), t, ctx.pool));
}

Status runPagedAttention(StepContext &ctx) {
  cpu::KVCacheView view;
  if (Status s = stepCacheView(ctx, 1, 5, view); !s)
    return s;
  cpu::KVCacheView *cache = &view;
  const Tensor &q = ctx.in(0), &bt = ctx.in(2), &lens = ctx.in(3),
               &qsl = ctx.in(4);
  if (q.type != ElemType::F32 || q.rank() != 3 || q.shape[2] != cache->headDim)
    return ctx.error("query " + shapeString(q.shape) +
                     " must be f32 [T, H, head_dim]");
  if (bt.type != ElemType::I32 || bt.rank() != 2 ||
      lens.type != ElemType::I32 || qsl.type != ElemType::I32 ||
      lens.numel() != bt.shape[0] || qsl.numel() != bt.shape[0] + 1)
    return ctx.error("block_tables, seq_lens and query_start_loc disagree");
  int64_t causal = ctx.step.getInt("causal", 1);
  if (causal == 0)
    return ctx.error("non-causal paged attention is not supported");
  if (causal != 1)
    return ctx.error("causal " + std::to_string(causal) +
                     " is not a flag (1: causal, 0: not)");
  cpu::RaggedBatch batch;
  batch.numTokens = q.shape[0];
  batch.numSeqs = bt.shape[0];
  batch.queryStartLoc = qsl.as<int32_t>();
  batch.seqLens = lens.as<int32_t>();
  batch.blockTables = bt.as<int32_t>();
  batch.maxBlocksPerSeq = bt.shape[1];
  cpu::AttentionParams params;
  params.numHeads = q.shape[1];
  params.scale = float(ctx.step.getFloat("scale", 0.0));
  params.slidingWindow = ctx.step.getInt("sliding_window", 0);
  params.softCap = float(ctx.step.getFloat("softcap", 0.0));
  // bf16 q.k and p.V (the AMX prefill tile) only where the weights are
  // bf16 already: its error (~4e-3 max|v| per output) is inside the bf16
  // tolerance, not the f32 one (docs/cpu-kernels.md, Paged attention).
  params.allowBf16 = ctx.weightStorage != cpu::DType::F32;
  // Zeroed: a query with no visible key keeps zeros.
  Tensor out = ctx.output(0, ElemType::F32, q.shape);
  std::memset(out.data, 0, out.bytes());
  if (Status s =
          fromCpu(ctx, cpu::pagedAttention(q.as<float>(), *cache, batch, params,
                                           out.as<float>(), ctx.pool));
      !s)
    return s;
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

Status runGatherRows(StepContext &ctx) {
  const Tensor &x = ctx.in(0);
  if (x.type != ElemType::F32 || x.rank() != 2)
    return ctx.error("input must be f32 [T, N]");
  std::vector<int32_t> idx;
  if (Status s = toInt32(ctx, ctx.in(1), idx); !s)
    return s;
  Tensor out = // every row written
      ctx.output(0, ElemType::F32, {int64_t(idx.size()), x.shape[1]});
  if (Status s =
          fromCpu(ctx, cpu::gatherRows(x.as<float>(), x.shape[0], x.shape[1],
                                       idx.data(), int64_t(idx.size()),
                                       out.as<float>(), ctx.pool));
      !s)
    return s;
  ctx.setResult(0, std::move(out));
  return Status::ok();
}

} // namespace

const std::vector<StepKernel> &folioStepKernels() {
  static const std::vector<StepKernel> table = {
      {"embedding", runEmbedding, prepareEmbedding, 2, 2},
      {"linear", runLinear, prepareLinear, 2, 3},
      {"gated_mlp", runGatedMLP, prepareGatedMLP, 4, 4},
      {"rms_norm", runRMSNorm, nullptr, 2, 2},
      {"layer_norm", runLayerNorm, nullptr, 2, 3},
      {"rotary", runRotary, prepareRotary, 2, 3},
      {"kv_write", runKVWrite, nullptr, 4, 6, /*numResults=*/0},
      {"paged_attention", runPagedAttention, nullptr, 5, 7},
      {"gather_rows", runGatherRows, nullptr, 2, 2},
  };
  return table;
}

} // namespace folio::exec
