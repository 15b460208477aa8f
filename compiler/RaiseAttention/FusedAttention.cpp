//===- FusedAttention.cpp - Fused attention ops to folio.attention --------===//

#include "compiler/RaiseAttention/AttentionRaise.h"
#include "compiler/RaiseAttention/RotaryBuild.h"

#include "compiler/ONNXOps/Match.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::folio;

namespace {
/// The pieces both fused forms share once their inputs are [B, H, S, D].
struct FusedOperands {
  Value q, k, v;
  /// k and v with the past prepended (what present_key/value return).
  Value keys, values;
  bool threeD = false;
};
} // namespace

static InFlightDiagnostic fusedError(ONNXNodeOp node) {
  return node.emitError() << (node.getDomain().empty()
                                  ? ""
                                  : node.getDomain().str() + ".")
                          << node.getOpType() << " node " << describeNode(node)
                          << ": ";
}

/// Splits q/k/v into heads and concatenates the past onto k/v.
static FailureOr<FusedOperands>
splitOperands(AttentionContext &ctx, ONNXNodeOp node, Value q, Value k, Value v,
              Value pastKey, Value pastValue, int64_t qHeads, int64_t kvHeads) {
  ONNXNodeBuilder &nb = ctx.nodes;
  Location loc = node.getLoc();
  std::string name = node.getNodeName().str();
  FusedOperands ops;
  std::optional<SmallVector<AffineExpr, 4>> qDims = getDims(ctx.inference, q);
  ops.threeD = qDims && qDims->size() == 3;
  if (ops.threeD && (qHeads <= 0 || kvHeads <= 0)) {
    fusedError(node) << "rank-3 inputs need q_num_heads/num_heads and "
                        "kv_num_heads";
    return failure();
  }
  ops.q = nb.splitHeads(loc, name + "/folio_q", q, qHeads);
  ops.k = nb.splitHeads(loc, name + "/folio_k", k, kvHeads);
  ops.v = nb.splitHeads(loc, name + "/folio_v", v, kvHeads);
  if (!ops.q || !ops.k || !ops.v) {
    fusedError(node) << "q/k/v cannot be split into " << qHeads << "/"
                     << kvHeads << " heads";
    return failure();
  }
  ops.keys = ops.k;
  ops.values = ops.v;
  return ops;
}

/// Concat(past, new) on the sequence axis, as the model returns it.
static Value appendPast(AttentionContext &ctx, ONNXNodeOp node,
                        StringRef suffix, Value past, Value current) {
  if (!past)
    return current;
  OpBuilder &b = ctx.nodes.getBuilder();
  return ctx.nodes.create(
      node.getLoc(), "Concat", node.getNodeName().str() + suffix.str(),
      {past, current}, b.getNamedAttr("axis", b.getI64IntegerAttr(2)));
}

static void replaceOutput(ONNXNodeOp node, unsigned index, Value value) {
  if (index < node.getNumResults())
    node.getResult(index).replaceAllUsesWith(value);
}

static double defaultScale(AttentionContext &ctx, Value q4) {
  std::optional<int64_t> d = getConstDim(ctx.inference, q4, 3);
  return d && *d > 0 ? 1.0 / std::sqrt(double(*d)) : 0.0;
}

namespace {
/// What opset-23 Attention and com.microsoft MultiHeadAttention share: q/k/v
/// (rank 3, split by the head counts, or rank 4), an optional past, a mask
/// evaluated by the mask analysis, causality and the score scale.
struct SplitAttention {
  Value q, k, v, pastKey, pastValue;
  int64_t qHeads = 0, kvHeads = 0;
  Value mask;
  MaskForm form = MaskForm::None;
  bool causal = false;
  double scale = 0.0, softcap = 0.0;
};
} // namespace

/// Raises `node` computing `op` into folio.attention; outputs 0-2 are the
/// attention, present key and present value.
static LogicalResult raiseSplitAttention(AttentionContext &ctx, ONNXNodeOp node,
                                         const SplitAttention &op) {
  if (bool(op.pastKey) != bool(op.pastValue))
    return fusedError(node) << "past_key and past_value come together";
  FailureOr<FusedOperands> ops =
      splitOperands(ctx, node, op.q, op.k, op.v, op.pastKey, op.pastValue,
                    op.qHeads, op.kvHeads);
  if (failed(ops))
    return failure();
  // torchlib (and the GenAI builder's fp16 MultiHeadAttention graphs) feed
  // the op k and v already repeated for grouped-query attention; attention
  // reads the KV concat itself, as the model returns it, so that page-kv
  // pages it. A past given to the op is concatenated to the unrepeated
  // heads, so the repeat can only be the exporter's when there is none.
  std::string message;
  if (!op.pastKey &&
      failed(stripKVRepeat(ctx.inference, ops->k, ops->v, message)))
    return fusedError(node) << message;
  ops->keys = appendPast(ctx, node, "/folio_present_key", op.pastKey, ops->k);
  ops->values =
      appendPast(ctx, node, "/folio_present_value", op.pastValue, ops->v);
  if (!ops->keys || !ops->values)
    return failure();

  FailureOr<MaskClass> maskClass = ctx.masks.classify(
      op.mask, op.form, op.causal, ops->q, 2, ops->keys, 2, message);
  if (failed(maskClass)) {
    Operation *at = op.mask && op.mask.getDefiningOp() ? op.mask.getDefiningOp()
                                                       : node.getOperation();
    return at->emitError() << "attention at node " << describeNode(node) << ": "
                           << message;
  }
  double scale = op.scale == 0.0 ? defaultScale(ctx, ops->q) : op.scale;
  Value attention = createAttention(ctx, node, ops->q, ops->keys, ops->values,
                                    *maskClass, scale, op.softcap);
  if (!attention)
    return failure();
  Value y = ops->threeD
                ? ctx.nodes.mergeHeads(node.getLoc(),
                                       node.getNodeName().str() + "/folio_y",
                                       attention)
                : attention;
  if (!y)
    return failure();
  replaceOutput(node, 0, y);
  replaceOutput(node, 1, ops->keys);
  replaceOutput(node, 2, ops->values);
  return success();
}

/// q, k and v (inputs 0 to 2) and the past key and value (inputs
/// `pastKey` and the next), as both fused forms number them.
static SplitAttention takeInputs(ONNXNodeOp node, unsigned pastKey) {
  SplitAttention op;
  op.q = getONNXInput(node, 0);
  op.k = getONNXInput(node, 1);
  op.v = getONNXInput(node, 2);
  op.pastKey = getONNXInput(node, pastKey);
  op.pastValue = getONNXInput(node, pastKey + 1);
  return op;
}

LogicalResult mlir::folio::raiseONNXAttention(AttentionContext &ctx,
                                              ONNXNodeOp node) {
  if (getONNXInput(node, 6))
    return fusedError(node) << "nonpad_kv_seqlen is not supported";
  if (node.getNumResults() > 3 && !node.getResult(3).use_empty())
    return fusedError(node) << "the qk_matmul_output output is not supported";
  SplitAttention op = takeInputs(node, 4);
  op.qHeads = getONNXIntAttr(node, "q_num_heads", 0);
  op.kvHeads = getONNXIntAttr(node, "kv_num_heads", 0);
  op.mask = getONNXInput(node, 3);
  if (op.mask)
    op.form = getElementTypeOrSelf(op.mask.getType()).isInteger(1)
                  ? MaskForm::KeepIfTrue
                  : MaskForm::Additive;
  op.causal = getONNXIntAttr(node, "is_causal", 0) != 0;
  op.scale = getONNXFloatAttr(node, "scale", 0.0);
  op.softcap = getONNXFloatAttr(node, "softcap", 0.0);
  return raiseSplitAttention(ctx, node, op);
}

LogicalResult mlir::folio::raiseMultiHeadAttention(AttentionContext &ctx,
                                                   ONNXNodeOp node) {
  // Shape inference refuses the inputs and outputs Folio does not take.
  if (node.getNumResults() > 3 && !node.getResult(3).use_empty())
    return fusedError(node) << "the qk output is not supported";
  SplitAttention op = takeInputs(node, 6);
  op.qHeads = op.kvHeads = getONNXIntAttr(node, "num_heads", 0);
  // attention_bias is added to the scores.
  op.mask = getONNXInput(node, 5);
  if (op.mask)
    op.form = MaskForm::Additive;
  op.causal = getONNXIntAttr(node, "unidirectional", 0) != 0;
  op.scale = getONNXFloatAttr(node, "scale", 0.0);
  return raiseSplitAttention(ctx, node, op);
}

/// True if `value` is computed from the graph input `input`.
static bool dependsOn(Value value, Value input) {
  if (!input)
    return false;
  llvm::SmallPtrSet<Operation *, 16> seen;
  SmallVector<Value> stack{value};
  while (!stack.empty()) {
    Value v = stack.pop_back_val();
    if (v == input)
      return true;
    Operation *def = v.getDefiningOp();
    if (def && seen.insert(def).second)
      stack.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

/// GroupQueryAttention's own rotary positions when the graph passes none:
/// ONNX Runtime gives new token s of sequence b the position
/// seqlens_k[b] + 1 - S + s (seqlens_k is the sequence's length minus one),
/// as [B, S]. Built from seqlens_k, never from the past's shape, so that
/// page-kv proves it equal to the serving contract's positions or refuses.
static Value buildPositions(AttentionContext &ctx, ONNXNodeOp node, Value query,
                            Value seqlens) {
  ONNXNodeBuilder &nb = ctx.nodes;
  OpBuilder &b = nb.getBuilder();
  Location loc = node.getLoc();
  std::string name = node.getNodeName().str() + "/folio_positions";
  Value shape = nb.create(loc, "Shape", name, query);
  Value seq = shape ? nb.create(loc, "Gather", name,
                                {shape, nb.constI64(loc, {1}, true)},
                                b.getNamedAttr("axis", b.getI64IntegerAttr(0)))
                    : Value();
  Value lens =
      nb.create(loc, "Cast", name, seqlens,
                b.getNamedAttr("to", b.getI64IntegerAttr(/*INT64=*/7)));
  if (!seq || !lens)
    return {};
  // past[b] = seqlens_k[b] + 1 - S, as a [B, 1] column.
  Value total =
      nb.create(loc, "Add", name, {lens, nb.constI64(loc, {1}, true)});
  Value past = total ? nb.create(loc, "Sub", name, {total, seq}) : Value();
  Value column =
      past ? nb.create(loc, "Unsqueeze", name, {past, nb.constI64(loc, {1})})
           : Value();
  Value range = nb.create(
      loc, "Range", name,
      {nb.constI64(loc, {0}, true), seq, nb.constI64(loc, {1}, true)});
  Value row =
      range ? nb.create(loc, "Unsqueeze", name, {range, nb.constI64(loc, {0})})
            : Value();
  return column && row ? nb.create(loc, "Add", name, {column, row}) : Value();
}

/// Splits packed QKV [B, S, (Hq + 2 Hkv) D] into q, k and v on the last axis.
static LogicalResult splitPacked(AttentionContext &ctx, ONNXNodeOp node,
                                 Value packed, int64_t qHeads, int64_t kvHeads,
                                 Value &q, Value &k, Value &v) {
  std::optional<int64_t> hidden = getConstDim(ctx.inference, packed, 2);
  int64_t parts = qHeads + 2 * kvHeads;
  if (!hidden || qHeads <= 0 || kvHeads <= 0 || *hidden % parts != 0)
    return fusedError(node)
           << "packed QKV (key and value omitted) needs a query of "
              "[batch, seq, (num_heads + 2 * kv_num_heads) * head_size] "
              "with a constant last dim";
  int64_t d = *hidden / parts;
  ONNXNodeBuilder &nb = ctx.nodes;
  Location loc = node.getLoc();
  std::string name = node.getNodeName().str();
  auto slice = [&](StringRef suffix, int64_t begin, int64_t end) {
    return nb.create(loc, "Slice", name + suffix.str(),
                     {packed, nb.constI64(loc, {begin}),
                      nb.constI64(loc, {end}), nb.constI64(loc, {2})});
  };
  q = slice("/folio_packed_q", 0, qHeads * d);
  k = slice("/folio_packed_k", qHeads * d, (qHeads + kvHeads) * d);
  v = slice("/folio_packed_v", (qHeads + kvHeads) * d, *hidden);
  if (!q || !k || !v)
    return fusedError(node) << "packed QKV cannot be split";
  return success();
}

/// ONNX Runtime sizes the present from total_sequence_length; Folio's
/// present is Concat(past, new), which agrees only when total is the past
/// plus the new tokens (Shape(attention_mask)[1], as the GenAI builder
/// writes it).
static LogicalResult checkTotalLength(AttentionContext &ctx, ONNXNodeOp node,
                                      Value total, Value keys) {
  const ONNXValueFacts *facts = ctx.inference.lookup(total);
  std::optional<SmallVector<AffineExpr, 4>> keyDims =
      getDims(ctx.inference, keys);
  if (facts && facts->ints && facts->ints->size() == 1 && (*facts->ints)[0] &&
      keyDims && keyDims->size() == 4 && (*keyDims)[2] &&
      (*facts->ints)[0] == (*keyDims)[2])
    return success();
  InFlightDiagnostic diag =
      fusedError(node)
      << "total_sequence_length cannot be proven equal to the past plus the "
         "new tokens";
  if (keyDims && keyDims->size() == 4 && (*keyDims)[2])
    diag << " (" << ctx.inference.describe((*keyDims)[2]) << ")";
  return diag << "; supported is Shape(attention_mask)[1], as ONNX Runtime "
                 "GenAI's model builder computes it";
}

LogicalResult mlir::folio::raiseGroupQueryAttention(AttentionContext &ctx,
                                                    ONNXNodeOp node) {
  Value query = getONNXInput(node, 0), key = getONNXInput(node, 1),
        value = getONNXInput(node, 2);
  Value pastKey = getONNXInput(node, 3), pastValue = getONNXInput(node, 4);
  if (bool(key) != bool(value))
    return fusedError(node) << "key and value come together (both given, or "
                               "both omitted for packed QKV)";
  if (getONNXInput(node, 10) || getONNXInput(node, 11) ||
      getONNXIntAttr(node, "smooth_softmax", 0) != 0)
    return fusedError(node) << "attention_bias, head_sink and smooth_softmax "
                               "are not supported";
  if (getONNXIntAttr(node, "qk_output", 0) != 0)
    return fusedError(node) << "qk_output is not supported";
  // Newer ONNX Runtime attributes (quantized KV caches and others) change
  // what the op computes: refuse any this raise does not read.
  for (NamedAttribute attr : node.getOnnxAttributes())
    if (!llvm::is_contained({"num_heads", "kv_num_heads", "scale", "softcap",
                             "local_window_size", "do_rotary",
                             "rotary_interleaved", "smooth_softmax",
                             "qk_output"},
                            attr.getName().strref()))
      return fusedError(node)
             << "attribute '" << attr.getName().strref()
             << "' is not supported; supported are num_heads, kv_num_heads, "
                "scale, softcap, local_window_size, do_rotary and "
                "rotary_interleaved";
  int64_t localWindow = getONNXIntAttr(node, "local_window_size", -1);
  // ONNX Runtime's local window holds local_window_size keys, the query's own
  // included (transformers' sliding_window; the model builder copies it).
  if (localWindow == 0 || localWindow < -1)
    return fusedError(node) << "local_window_size " << localWindow
                            << " is not supported; supported are -1 (no "
                               "window) and a positive window";
  if (bool(pastKey) != bool(pastValue))
    return fusedError(node) << "past_key and past_value come together";
  for (unsigned i = 1; i < node.getNumResults(); ++i)
    if (i > 2 && !node.getResult(i).use_empty())
      return fusedError(node) << "output " << i << " is not supported";
  int64_t qHeads = getONNXIntAttr(node, "num_heads", 0);
  int64_t kvHeads = getONNXIntAttr(node, "kv_num_heads", 0);
  if (!key &&
      failed(splitPacked(ctx, node, query, qHeads, kvHeads, query, key, value)))
    return failure();
  FailureOr<FusedOperands> ops = splitOperands(
      ctx, node, query, key, value, pastKey, pastValue, qHeads, kvHeads);
  if (failed(ops))
    return failure();

  if (getONNXIntAttr(node, "do_rotary", 0) != 0) {
    Value cos = getONNXInput(node, 7), sin = getONNXInput(node, 8);
    if (!cos || !sin)
      return fusedError(node) << "do_rotary needs cos_cache and sin_cache";
    std::string message;
    FailureOr<RotaryAngles> angles =
        readCacheTables(ctx.inference, cos, sin, message);
    if (failed(angles))
      return fusedError(node) << message;
    Value positions = getONNXInput(node, 9);
    if (!positions)
      positions = buildPositions(ctx, node, query, getONNXInput(node, 5));
    if (!positions)
      return fusedError(node) << "its rotary positions cannot be built";
    int64_t pairs =
        angles->rows > 0 ? angles->table.size() / angles->rows / 2 : 0;
    RopeStyle style = getONNXIntAttr(node, "rotary_interleaved", 0)
                          ? RopeStyle::interleaved
                          : RopeStyle::half_split;
    Value table;
    ops->q = buildRotary(ctx.nodes, node.getLoc(), ops->q, positions, *angles,
                         2 * pairs, style, /*forceTable=*/false, table);
    ops->k = buildRotary(ctx.nodes, node.getLoc(), ops->k, positions, *angles,
                         2 * pairs, style, /*forceTable=*/false, table);
  }
  ops->keys = appendPast(ctx, node, "/folio_present_key", pastKey, ops->k);
  ops->values =
      appendPast(ctx, node, "/folio_present_value", pastValue, ops->v);
  if (!ops->keys || !ops->values)
    return failure();
  if (failed(checkTotalLength(ctx, node, getONNXInput(node, 6), ops->keys)))
    return failure();

  // Always causal (bottom-right); keys past seqlens_k are padding, which is
  // attention_mask when the graph computes seqlens_k from it.
  MaskClass mask;
  mask.window = localWindow > 0 ? localWindow : 0;
  Value seqlens = getONNXInput(node, 5);
  mask.keyPadding =
      seqlens && dependsOn(seqlens, ctx.masks.getInputs().attentionMask);
  double scale = getONNXFloatAttr(node, "scale", 0.0);
  if (scale == 0.0)
    scale = defaultScale(ctx, ops->q);
  Value attention =
      createAttention(ctx, node, ops->q, ops->keys, ops->values, mask, scale,
                      getONNXFloatAttr(node, "softcap", 0.0));
  if (!attention)
    return failure();
  Value y = ctx.nodes.mergeHeads(
      node.getLoc(), node.getNodeName().str() + "/folio_output", attention);
  if (!y)
    return failure();
  replaceOutput(node, 0, y);
  replaceOutput(node, 1, ops->keys);
  replaceOutput(node, 2, ops->values);
  return success();
}
