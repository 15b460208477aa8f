//===- RaiseAttention.cpp - Attention subgraphs to folio.attention --------===//

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/RaiseAttention/AttentionRaise.h"
#include "compiler/RaiseAttention/Passes.h"

#include "compiler/ONNXOps/Match.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "folio-raise-attention"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIORAISEATTENTIONPASS
#include "compiler/RaiseAttention/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

/// Precision casts around the scores (softmax in float32) change nothing
/// the op does not already do.
static Value stripCasts(Value value) {
  while (ONNXNodeOp cast = matchONNX(value, "Cast")) {
    Type in = getElementTypeOrSelf(cast.getInputs()[0].getType());
    if (!isa<FloatType>(in) ||
        !isa<FloatType>(getElementTypeOrSelf(cast.getResult(0).getType())))
      break;
    value = cast.getInputs()[0];
  }
  return value;
}

/// Mul(x, c), Mul(c, x) or Div(x, c) with a scalar constant c: x and the
/// factor it is multiplied by.
static std::optional<std::pair<Value, double>> matchScale(Value value) {
  auto node = value.getDefiningOp<ONNXNodeOp>();
  if (!node || !node.getDomain().empty() || node.getInputs().size() != 2)
    return std::nullopt;
  Value a = node.getInputs()[0], b = node.getInputs()[1];
  if (node.getOpType() == "Mul") {
    if (std::optional<double> c = getScalarConstant(b))
      return std::make_pair(a, *c);
    if (std::optional<double> c = getScalarConstant(a))
      return std::make_pair(b, *c);
  }
  if (node.getOpType() == "Div")
    if (std::optional<double> c = getScalarConstant(b); c && *c != 0)
      return std::make_pair(a, 1.0 / *c);
  return std::nullopt;
}

/// Strips casts and constant scales, multiplying them into `scale`.
static Value stripScales(Value value, double &scale) {
  value = stripCasts(value);
  while (std::optional<std::pair<Value, double>> s = matchScale(value)) {
    scale *= s->second;
    value = stripCasts(s->first);
  }
  return value;
}

namespace {
/// MatMul(q, k^T), scaled and optionally soft-capped.
struct ScoreChain {
  ONNXNodeOp matmul;
  double scale = 1.0;
  double softcap = 0.0;
};
} // namespace

/// Parses `cap * tanh(scale' * s)` or `scale * s` down to the QK MatMul.
static std::optional<ScoreChain> parseScores(Value value) {
  ScoreChain chain;
  double outer = 1.0;
  value = stripScales(value, outer);
  if (ONNXNodeOp tanh = matchONNX(value, "Tanh")) {
    double inner = 1.0;
    value = stripScales(tanh.getInputs()[0], inner);
    // cap * tanh(inner * s) == softcap * tanh(scale * s / softcap).
    chain.softcap = outer;
    chain.scale = inner * outer;
  } else {
    chain.scale = outer;
  }
  chain.matmul = matchONNX(value, "MatMul");
  if (!chain.matmul)
    return std::nullopt;
  return chain;
}

/// True for a scalar constant that hides a score (-inf, finfo.min).
static bool isHidingConstant(Value value) {
  std::optional<double> v = getScalarConstant(value);
  return v && *v <= -1e4;
}

/// Where(IsNaN(p), 0, p) on the Softmax output `p`.
static ONNXNodeOp matchNaNGuard(Operation *user, Value p) {
  auto where = dyn_cast<ONNXNodeOp>(user);
  if (!where || where.getOpType() != "Where" || !where.getDomain().empty() ||
      where.getInputs().size() != 3 || where.getInputs()[2] != p)
    return {};
  ONNXNodeOp isNaN = matchONNX(where.getInputs()[0], "IsNaN");
  std::optional<double> zero = getScalarConstant(where.getInputs()[1]);
  if (!isNaN || isNaN.getInputs()[0] != p || !zero || *zero != 0.0)
    return {};
  return where;
}

namespace {
/// One mask applied to the scores on their way to the Softmax.
struct MaskTerm {
  Value mask;
  MaskForm form;
};
} // namespace

/// Parses masks applied one after another to the scores (GPT-2's eager
/// attention selects with its causal buffer, then adds the padding mask):
/// Add(x, mask), Where(keep, x, -inf) or Where(hide, -inf, x) down to the
/// score chain; `terms` gets the masks innermost first.
static std::optional<ScoreChain>
parseMaskedScores(Value value, SmallVectorImpl<MaskTerm> &terms,
                  unsigned depth = 0) {
  value = stripCasts(value);
  if (std::optional<ScoreChain> chain = parseScores(value))
    return chain;
  auto node = value.getDefiningOp<ONNXNodeOp>();
  if (!node || !node.getDomain().empty() || depth >= 4)
    return std::nullopt;
  if (node.getOpType() == "Add" && node.getInputs().size() == 2) {
    for (unsigned i = 0; i < 2; ++i)
      if (std::optional<ScoreChain> chain =
              parseMaskedScores(node.getInputs()[i], terms, depth + 1)) {
        terms.push_back({node.getInputs()[1 - i], MaskForm::Additive});
        return chain;
      }
  } else if (node.getOpType() == "Where" && node.getInputs().size() == 3) {
    Value cond = node.getInputs()[0];
    if (isHidingConstant(node.getInputs()[2]))
      if (std::optional<ScoreChain> chain =
              parseMaskedScores(node.getInputs()[1], terms, depth + 1)) {
        terms.push_back({cond, MaskForm::KeepIfTrue});
        return chain;
      }
    if (isHidingConstant(node.getInputs()[1]))
      if (std::optional<ScoreChain> chain =
              parseMaskedScores(node.getInputs()[2], terms, depth + 1)) {
        terms.push_back({cond, MaskForm::KeepIfFalse});
        return chain;
      }
  }
  return std::nullopt;
}

/// One additive mask equal to `terms` applied in turn, for the mask
/// analysis: each boolean mask becomes Where(., 0, -inf) (or -inf, 0) and
/// the terms are summed. A key is kept iff every term keeps it; hidden keys
/// sum to a large negative number or -inf, and both weigh 0 in the Softmax
/// as long as a row keeps some key, which the analysis proves (causal: a
/// query sees itself). Only the analysis reads it; it is dead afterwards.
static Value combineMasks(ONNXNodeBuilder &nb, Location loc, StringRef name,
                          ArrayRef<MaskTerm> terms, FloatType scoreElement) {
  const llvm::fltSemantics &semantics = scoreElement.getFloatSemantics();
  auto scalarType = RankedTensorType::get({}, scoreElement);
  Value combined;
  for (auto [i, term] : llvm::enumerate(terms)) {
    std::string termName = (name + "/folio_mask_" + Twine(i)).str();
    Value additive = term.mask;
    if (term.form != MaskForm::Additive) {
      Value zero = nb.constant(
          loc, DenseElementsAttr::get(scalarType, APFloat::getZero(semantics)));
      Value hidden = nb.constant(
          loc, DenseElementsAttr::get(
                   scalarType, APFloat::getInf(semantics, /*Negative=*/true)));
      SmallVector<Value, 3> operands = {term.mask, zero, hidden};
      if (term.form == MaskForm::KeepIfFalse)
        std::swap(operands[1], operands[2]);
      additive = nb.create(loc, "Where", termName, operands);
    }
    if (!additive)
      return {};
    combined = combined ? nb.create(loc, "Add", termName, {combined, additive})
                        : additive;
    if (!combined)
      return {};
  }
  return combined;
}

/// The keys k [B, H, L, D] when `kt` is k^T built through three dims, as
/// torchlib's SDPA decomposition writes it at opset 18:
/// Reshape(Transpose(Reshape(k, [B*H, L, D]), [0, 2, 1]), [B, H, D, L]).
/// Reshape is row-major, so the inner one keeps each [L, D] slice of k whole
/// when its last two dims are k's, and the outer one splits B*H back the way
/// the inner one merged it when it ends in [B, H] then the transposed slice:
/// those dims, symbol by symbol, are what makes it k^T; the element counts
/// that Reshape itself checks do the rest.
static Value matchFoldedKeyTranspose(ONNXShapeInference &inf, Value kt) {
  ONNXNodeOp outer = matchONNX(kt, "Reshape");
  ONNXNodeOp transpose =
      outer ? matchONNX(outer.getInputs()[0], "Transpose") : ONNXNodeOp();
  auto perm =
      transpose ? transpose.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm")
                : DenseI64ArrayAttr();
  if (!perm || perm.asArrayRef() != ArrayRef<int64_t>{0, 2, 1})
    return {};
  ONNXNodeOp inner = matchONNX(transpose.getInputs()[0], "Reshape");
  if (!inner)
    return {};
  Value k = inner.getInputs()[0];
  std::optional<SmallVector<AffineExpr, 4>> kDims = getDims(inf, k),
                                            flat = getDims(inf,
                                                           inner.getResult(0)),
                                            out = getDims(inf, kt);
  if (!kDims || !flat || !out || kDims->size() != 4 || flat->size() != 3 ||
      out->size() != 4 || llvm::is_contained(*kDims, AffineExpr()))
    return {};
  const SmallVector<AffineExpr, 4> &d = *kDims;
  if ((*flat)[1] != d[2] || (*flat)[2] != d[3] ||
      *out != SmallVector<AffineExpr, 4>{d[0], d[1], d[3], d[2]})
    return {};
  return k;
}

/// Removes a GQA repeat from [B, Hq, L, D] and returns [B, Hkv, L, D]:
/// Reshape(Expand|Tile(Unsqueeze(kv, 2))) or, for one KV head, Tile.
static FailureOr<Value> stripRepeat(Value value, ONNXShapeInference &inf,
                                    std::string &error) {
  auto dimsOf = [&](Value v) { return getDims(inf, v); };
  if (ONNXNodeOp reshape = matchONNX(value, "Reshape")) {
    Value repeated = reshape.getInputs()[0];
    ONNXNodeOp expand = matchONNX(repeated, "Expand");
    if (!expand)
      expand = matchONNX(repeated, "Tile");
    ONNXNodeOp unsqueeze =
        expand ? matchONNX(expand.getInputs()[0], "Unsqueeze") : ONNXNodeOp();
    std::optional<SmallVector<int64_t>> axes =
        unsqueeze && unsqueeze.getInputs().size() == 2
            ? getIntConstants(unsqueeze.getInputs()[1])
            : std::nullopt;
    if (axes && axes->size() == 1 && ((*axes)[0] == 2 || (*axes)[0] == -3)) {
      Value kv = unsqueeze.getInputs()[0];
      auto kvDims = dimsOf(kv), eDims = dimsOf(expand.getResult(0)),
           rDims = dimsOf(reshape.getResult(0));
      // Shape arithmetic may lose some dims; none that is known may differ.
      auto same = [](AffineExpr a, AffineExpr b) { return !a || !b || a == b; };
      if (kvDims && eDims && rDims && kvDims->size() == 4 &&
          eDims->size() == 5 && rDims->size() == 4) {
        auto &k = *kvDims, &e = *eDims, &r = *rDims;
        std::optional<int64_t> groups = getConstantDim(e[2]);
        std::optional<int64_t> kvHeads = getConstantDim(k[1]);
        std::optional<int64_t> heads = getConstantDim(r[1]);
        if (groups && kvHeads && heads && same(e[0], k[0]) &&
            same(e[1], k[1]) && same(e[3], k[2]) && same(e[4], k[3]) &&
            same(r[0], k[0]) && same(r[2], k[2]) && same(r[3], k[3]) &&
            *heads == *kvHeads * *groups)
          return kv;
      }
    }
  }
  if (ONNXNodeOp tile = matchONNX(value, "Tile")) {
    std::optional<SmallVector<int64_t>> repeats =
        getIntConstants(tile.getInputs()[1]);
    Value kv = tile.getInputs()[0];
    if (repeats && repeats->size() == 4 && (*repeats)[0] == 1 &&
        (*repeats)[2] == 1 && (*repeats)[3] == 1) {
      if (getConstDim(inf, kv, 1) == 1)
        return kv;
      error = "node " + describeNode(tile) +
              " repeats KV heads with Tile, which gives query head h the KV "
              "head h mod kv_heads; grouped-query attention gives it head "
              "h / (heads / kv_heads)";
      return failure();
    }
  }
  return value;
}

/// "node 'x'" for a node's result, "a graph input" for an argument.
static std::string describeProducer(Value value) {
  Operation *def = value.getDefiningOp();
  return def ? "node " + describeNode(def) : std::string("a graph input");
}

LogicalResult mlir::folio::stripKVRepeat(ONNXShapeInference &inf, Value &k,
                                         Value &v, std::string &error) {
  FailureOr<Value> keys = stripRepeat(k, inf, error);
  if (failed(keys))
    return failure();
  FailureOr<Value> values = stripRepeat(v, inf, error);
  if (failed(values))
    return failure();
  // Stripping one side only would pair Hkv key heads with Hq value heads.
  std::optional<int64_t> keyHeads = getConstDim(inf, *keys, 1),
                         valueHeads = getConstDim(inf, *values, 1);
  if ((*keys == k) != (*values == v) &&
      (!keyHeads || !valueHeads || *keyHeads != *valueHeads)) {
    error = "the keys (from " + describeProducer(k) + ") and values (from " +
            describeProducer(v) +
            ") are not repeated alike for grouped-query attention";
    return failure();
  }
  k = *keys;
  v = *values;
  return success();
}

Value mlir::folio::createAttention(AttentionContext &ctx, Operation *anchor,
                                   Value q, Value k, Value v,
                                   const MaskClass &mask, double scale,
                                   double softcap) {
  auto qt = dyn_cast<RankedTensorType>(q.getType());
  auto kt = dyn_cast<RankedTensorType>(k.getType());
  auto vt = dyn_cast<RankedTensorType>(v.getType());
  if (!qt || !kt || !vt || qt.getRank() != 4 || kt.getRank() != 4 ||
      vt.getRank() != 4) {
    anchor->emitError() << "attention at node " << describeNode(anchor)
                        << ": query, key and value must be rank 4 [batch, "
                           "heads, seq, head_dim]";
    return {};
  }
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) &&
      (hkv <= 0 || hq % hkv != 0)) {
    anchor->emitError() << "attention at node " << describeNode(anchor) << ": "
                        << hq << " query heads are not a multiple of " << hkv
                        << " key/value heads";
    return {};
  }
  if (!(scale > 0) || !std::isfinite(scale) || softcap < 0) {
    anchor->emitError() << "attention at node " << describeNode(anchor)
                        << ": the score scale " << scale << " (soft-cap "
                        << softcap << ") is not a positive number";
    return {};
  }
  if (!mask.undefinedMixed.empty())
    anchor->emitWarning()
        << "attention at node " << describeNode(anchor)
        << ": the graph defines its mask for prefill without past and "
           "one-token decode only ("
        << mask.undefinedMixed
        << "); it is the same class on both, which Folio also serves for "
           "several new tokens over a past (chunked prefill, prefix caching)";
  Value padding;
  if (mask.keyPadding)
    padding = ctx.masks.getInputs().attentionMask;
  auto resultType = RankedTensorType::get(
      {qt.getDimSize(0), hq, qt.getDimSize(2), vt.getDimSize(3)},
      qt.getElementType());
  OpBuilder &b = ctx.nodes.getBuilder();
  auto op = b.create<AttentionOp>(anchor->getLoc(), resultType, q, k, v,
                                  padding, APFloat(scale), mask.causal,
                                  uint64_t(mask.window), APFloat(softcap));
  std::optional<SmallVector<AffineExpr, 4>> qd = getDims(ctx.inference, q),
                                            vd = getDims(ctx.inference, v);
  ONNXValueFacts facts = ctx.inference.factsForType(resultType);
  if (qd && vd && qd->size() == 4 && vd->size() == 4)
    facts.dims =
        SmallVector<AffineExpr, 4>{(*qd)[0], (*qd)[1], (*qd)[2], (*vd)[3]};
  ctx.inference.setFacts(op.getResult(), std::move(facts));
  return op.getResult();
}

namespace {

struct RaiseAttentionPass
    : mlir::folio::impl::FolioRaiseAttentionPassBase<RaiseAttentionPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto &shapes = getAnalysis<ONNXShapeAnalysis>();
    if (!shapes.succeeded())
      return signalPassFailure();
    ONNXShapeInference &inference = shapes.get();
    OpBuilder builder(&getContext());
    ONNXNodeBuilder nodes(builder, inference, getDefaultOpset(func));
    MaskAnalysis masks(func, inference);
    AttentionContext ctx{func, inference, nodes, masks};

    SmallVector<ONNXNodeOp> candidates;
    func.walk([&](ONNXNodeOp node) {
      StringRef type = node.getOpType();
      if ((node.getDomain().empty() &&
           (type == "Softmax" ||
            (type == "Attention" && node.getOpset() >= 23))) ||
          (node.getDomain() == kMicrosoftDomain &&
           (type == "GroupQueryAttention" || type == "MultiHeadAttention")))
        candidates.push_back(node);
    });
    bool failed = false;
    for (ONNXNodeOp node : candidates) {
      builder.setInsertionPoint(node);
      LogicalResult result = success();
      if (node.getOpType() == "Softmax")
        result = raiseDecomposed(ctx, node);
      else if (node.getOpType() == "Attention")
        result = raiseONNXAttention(ctx, node);
      else if (node.getOpType() == "MultiHeadAttention")
        result = raiseMultiHeadAttention(ctx, node);
      else
        result = raiseGroupQueryAttention(ctx, node);
      failed |= mlir::failed(result);
    }
    if (failed)
      return signalPassFailure();
    // Masks hold as classified only up to the lengths they were evaluated
    // on; the plan carries the shortest so that the runtime refuses longer
    // sequences. A function pass may not touch the module, so the limit
    // lives on the function (page-kv keeps it on `forward`).
    if (int64_t proven = masks.getProvenContext()) {
      if (auto previous = func->getAttrOfType<IntegerAttr>(kMaxContextAttrName))
        proven = std::min(proven, previous.getInt());
      func->setAttr(kMaxContextAttrName, builder.getI64IntegerAttr(proven));
    }
    eraseDeadOps(func, &inference);
    markAnalysesPreserved<ONNXShapeAnalysis>();
  }

  LogicalResult raiseDecomposed(AttentionContext &ctx, ONNXNodeOp softmax);
};

/// softmax(mask(softcap(scale * q k^T))) v.
LogicalResult RaiseAttentionPass::raiseDecomposed(AttentionContext &ctx,
                                                  ONNXNodeOp softmax) {
  ONNXShapeInference &inf = ctx.inference;
  // Only a Softmax whose probabilities multiply values is attention.
  auto findValueMatMul = [](Value probs) {
    for (Operation *user : probs.getUsers()) {
      auto node = dyn_cast<ONNXNodeOp>(user);
      while (node && node.getOpType() == "Cast" &&
             node.getResult(0).hasOneUse())
        node = dyn_cast<ONNXNodeOp>(*node.getResult(0).user_begin());
      if (node && node.getOpType() == "MatMul" && node.getDomain().empty() &&
          stripCasts(node.getInputs()[0]) == probs)
        return node;
    }
    return ONNXNodeOp();
  };
  ONNXNodeOp pv = findValueMatMul(softmax.getResult(0));
  // Newer SDPA exports zero the probabilities of fully masked rows (NaN
  // after Softmax) before the MatMul. The guard changes nothing once the
  // mask is proven to keep at least one key in every real row, which every
  // class the mask analysis accepts does: causal rows see their own
  // position, windows include it, and an unmasked row sees every key.
  ONNXNodeOp guard;
  for (Operation *user : softmax.getResult(0).getUsers()) {
    if (pv)
      break;
    if ((guard = matchNaNGuard(user, softmax.getResult(0))))
      pv = findValueMatMul(guard.getResult(0));
  }
  std::optional<SmallVector<AffineExpr, 4>> dims =
      getDims(inf, softmax.getResult(0));
  if (!pv || !dims || dims->size() != 4)
    return success();
  auto error = [&](Operation *at) {
    return at->emitError() << "attention at node " << describeNode(softmax)
                           << ": ";
  };
  int64_t defaultAxis = softmax.getOpset() >= 13 ? -1 : 1;
  if (normalizeAxis(getONNXIntAttr(softmax, "axis", defaultAxis), 4) != 3)
    return error(softmax) << "Softmax must run over the keys (the last axis)";

  // Masks: Add(scores, mask) or Where(keep, scores, -inf), possibly several
  // in a row.
  Value scores = stripCasts(softmax.getInputs()[0]);
  SmallVector<MaskTerm> terms;
  std::optional<ScoreChain> chain = parseMaskedScores(scores, terms);
  if (!chain) {
    Operation *at = scores.getDefiningOp() ? scores.getDefiningOp() : softmax;
    return error(at) << "the Softmax input (node " << describeNode(at)
                     << ") is not scale -> soft-cap -> masks (Add, or Where "
                        "with -inf) applied to MatMul(q, Transpose(k))";
  }
  Value mask;
  MaskForm form = MaskForm::None;
  if (terms.size() == 1) {
    mask = terms.front().mask;
    form = terms.front().form;
  } else if (terms.size() > 1) {
    auto element = dyn_cast<FloatType>(getElementTypeOrSelf(scores.getType()));
    if (!element)
      return error(softmax) << "its scores are not floating point";
    ctx.nodes.getBuilder().setInsertionPoint(softmax);
    mask = combineMasks(ctx.nodes, softmax.getLoc(),
                        softmax.getNodeName().empty() ? "Softmax"
                                                      : softmax.getNodeName(),
                        terms, element);
    if (!mask)
      return failure();
    form = MaskForm::Additive;
  }

  // Scales on q and k before the MatMul (SDPA exports scale both by
  // sqrt(scale)).
  ONNXNodeOp qk = chain->matmul;
  double qkScale = 1.0;
  Value q = stripScales(qk.getInputs()[0], qkScale);
  Value kt = stripScales(qk.getInputs()[1], qkScale);
  ONNXNodeOp transpose = matchONNX(kt, "Transpose");
  auto perm =
      transpose ? transpose.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm")
                : DenseI64ArrayAttr();
  Value k = matchFoldedKeyTranspose(inf, kt);
  if (k)
    k = stripScales(k, qkScale);
  else if (!perm || perm.size() != 4 || perm[0] != 0)
    return error(qk) << "the keys of node " << describeNode(qk)
                     << " are not a Transpose of [batch, heads, keys, "
                        "head_dim]";
  else
    k = stripScales(transpose.getInputs()[0], qkScale);
  // Inside a soft-cap the q/k scales still multiply the raw scores.
  double scale = chain->scale * qkScale;
  if (perm && perm.asArrayRef() != ArrayRef<int64_t>{0, 1, 3, 2}) {
    // k^T = transpose(k0, perm): k = transpose(k0, perm with the last two
    // swapped).
    SmallVector<int64_t> keyPerm(perm.asArrayRef());
    std::swap(keyPerm[2], keyPerm[3]);
    ctx.nodes.getBuilder().setInsertionPoint(transpose);
    k = ctx.nodes.transpose(transpose.getLoc(),
                            transpose.getNodeName().str() + "/folio_keys", k,
                            keyPerm);
    if (!k)
      return failure();
  }
  Value v = stripCasts(pv.getInputs()[1]);

  std::string message;
  if (failed(stripKVRepeat(inf, k, v, message)))
    return error(softmax) << message;

  FailureOr<MaskClass> maskClass =
      ctx.masks.classify(mask, form, /*alsoCausal=*/false, qk.getResult(0), 2,
                         qk.getResult(0), 3, message);
  if (failed(maskClass)) {
    if (terms.size() > 1) {
      // The combined mask is Folio's; name the model's nodes.
      std::string producers;
      for (const MaskTerm &term : terms)
        producers +=
            (producers.empty() ? "" : ", ") +
            (term.mask.getDefiningOp() ? describeNode(term.mask.getDefiningOp())
                                       : std::string("a graph input"));
      Operation *at = scores.getDefiningOp();
      return at->emitError()
             << "attention at node " << describeNode(softmax) << ": " << message
             << " (masks applied in turn, from nodes " << producers << ")";
    }
    Operation *at = mask && mask.getDefiningOp() ? mask.getDefiningOp()
                                                 : softmax.getOperation();
    return at->emitError() << "attention at node " << describeNode(softmax)
                           << ": " << message
                           << (mask && mask.getDefiningOp()
                                   ? " (mask from node " + describeNode(at) +
                                         ")"
                                   : std::string());
  }
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << describeNode(softmax)
                          << ": scale " << scale << ", softcap "
                          << chain->softcap << ", window " << maskClass->window
                          << (guard ? ", NaN guard dropped" : "") << "\n");
  ctx.nodes.getBuilder().setInsertionPoint(pv);
  Value attention =
      createAttention(ctx, pv, q, k, v, *maskClass, scale, chain->softcap);
  if (!attention)
    return failure();
  if (attention.getType() != pv.getResult(0).getType() &&
      llvm::any_of(pv.getResult(0).getUsers(),
                   [](Operation *user) { return !isa<ONNXNodeOp>(user); }))
    return error(pv) << "its output type " << pv.getResult(0).getType()
                     << " differs from the attention's " << attention.getType();
  pv.getResult(0).replaceAllUsesWith(attention);
  return success();
}

} // namespace
