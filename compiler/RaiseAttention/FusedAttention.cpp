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

LogicalResult mlir::folio::raiseONNXAttention(AttentionContext &ctx,
                                              ONNXNodeOp node) {
  if (getONNXInput(node, 6))
    return fusedError(node) << "nonpad_kv_seqlen is not supported";
  if (node.getNumResults() > 3 && !node.getResult(3).use_empty())
    return fusedError(node) << "the qk_matmul_output output is not supported";
  Value mask = getONNXInput(node, 3);
  Value pastKey = getONNXInput(node, 4), pastValue = getONNXInput(node, 5);
  if (bool(pastKey) != bool(pastValue))
    return fusedError(node) << "past_key and past_value come together";
  FailureOr<FusedOperands> ops =
      splitOperands(ctx, node, getONNXInput(node, 0), getONNXInput(node, 1),
                    getONNXInput(node, 2), pastKey, pastValue,
                    getONNXIntAttr(node, "q_num_heads", 0),
                    getONNXIntAttr(node, "kv_num_heads", 0));
  if (failed(ops))
    return failure();
  ops->keys = appendPast(ctx, node, "/folio_present_key", pastKey, ops->k);
  ops->values =
      appendPast(ctx, node, "/folio_present_value", pastValue, ops->v);
  if (!ops->keys || !ops->values)
    return failure();

  MaskForm form = MaskForm::None;
  if (mask)
    form = getElementTypeOrSelf(mask.getType()).isInteger(1)
               ? MaskForm::KeepIfTrue
               : MaskForm::Additive;
  std::string message;
  FailureOr<MaskClass> maskClass =
      ctx.masks.classify(mask, form, getONNXIntAttr(node, "is_causal", 0) != 0,
                         ops->q, 2, ops->keys, 2, message);
  if (failed(maskClass)) {
    Operation *at = mask && mask.getDefiningOp() ? mask.getDefiningOp()
                                                 : node.getOperation();
    return at->emitError() << "attention at node " << describeNode(node) << ": "
                           << message;
  }
  double scale = getONNXFloatAttr(node, "scale", 0.0);
  if (scale == 0.0)
    scale = defaultScale(ctx, ops->q);
  Value attention =
      createAttention(ctx, node, ops->q, ops->keys, ops->values, *maskClass,
                      scale, getONNXFloatAttr(node, "softcap", 0.0));
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

/// past_len + arange(S), broadcast to [B, S]: GroupQueryAttention's own
/// positions when it rotates and the graph passes none.
static Value buildPositions(AttentionContext &ctx, ONNXNodeOp node, Value query,
                            Value pastKey) {
  ONNXNodeBuilder &nb = ctx.nodes;
  OpBuilder &b = nb.getBuilder();
  Location loc = node.getLoc();
  std::string name = node.getNodeName().str() + "/folio_positions";
  auto dim = [&](Value of, int64_t i) -> Value {
    Value shape = nb.create(loc, "Shape", name, of);
    if (!shape)
      return {};
    return nb.create(loc, "Gather", name, {shape, nb.constI64(loc, {i}, true)},
                     b.getNamedAttr("axis", b.getI64IntegerAttr(0)));
  };
  Value seq = dim(query, 1), batch = dim(query, 0);
  Value past = pastKey ? dim(pastKey, 2) : nb.constI64(loc, {0}, true);
  if (!seq || !batch || !past)
    return {};
  Value end = nb.create(loc, "Add", name, {past, seq});
  Value range = end ? nb.create(loc, "Range", name,
                                {past, end, nb.constI64(loc, {1}, true)})
                    : Value();
  Value axes = nb.constI64(loc, {0});
  Value row =
      range ? nb.create(loc, "Unsqueeze", name, {range, axes}) : Value();
  Value b1 = nb.create(loc, "Unsqueeze", name, {batch, axes});
  Value s1 = nb.create(loc, "Unsqueeze", name, {seq, axes});
  if (!row || !b1 || !s1)
    return {};
  Value shape = nb.create(loc, "Concat", name, {b1, s1},
                          b.getNamedAttr("axis", b.getI64IntegerAttr(0)));
  return shape ? nb.create(loc, "Expand", name, {row, shape}) : Value();
}

LogicalResult mlir::folio::raiseGroupQueryAttention(AttentionContext &ctx,
                                                    ONNXNodeOp node) {
  Value query = getONNXInput(node, 0), key = getONNXInput(node, 1),
        value = getONNXInput(node, 2);
  Value pastKey = getONNXInput(node, 3), pastValue = getONNXInput(node, 4);
  if (!key || !value)
    return fusedError(node) << "packed QKV (no key/value inputs) is not "
                               "supported";
  if (getONNXInput(node, 10) || getONNXInput(node, 11) ||
      getONNXIntAttr(node, "smooth_softmax", 0) != 0)
    return fusedError(node) << "attention_bias, head_sink and smooth_softmax "
                               "are not supported";
  if (bool(pastKey) != bool(pastValue))
    return fusedError(node) << "past_key and past_value come together";
  for (unsigned i = 1; i < node.getNumResults(); ++i)
    if (i > 2 && !node.getResult(i).use_empty())
      return fusedError(node) << "output " << i << " is not supported";
  FailureOr<FusedOperands> ops =
      splitOperands(ctx, node, query, key, value, pastKey, pastValue,
                    getONNXIntAttr(node, "num_heads", 0),
                    getONNXIntAttr(node, "kv_num_heads", 0));
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
      positions = buildPositions(ctx, node, query, pastKey);
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

  // Always causal (bottom-right); keys past seqlens_k are padding, which is
  // attention_mask when the graph computes seqlens_k from it.
  MaskClass mask;
  int64_t localWindow = getONNXIntAttr(node, "local_window_size", -1);
  // ORT's local window counts the keys left of the query, the query's own
  // key not included.
  mask.window = localWindow >= 0 ? localWindow + 1 : 0;
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
