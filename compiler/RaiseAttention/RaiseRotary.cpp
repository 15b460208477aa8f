//===- RaiseRotary.cpp - Rotary embeddings to folio.rotary ----------------===//

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/RaiseAttention/Passes.h"
#include "compiler/RaiseAttention/RaiseUtils.h"
#include "compiler/RaiseAttention/RotaryBuild.h"
#include "compiler/RaiseAttention/RotaryMatch.h"

#include "compiler/ONNXOps/Match.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "folio-raise-rotary"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIORAISEROTARYPASS
#include "compiler/RaiseAttention/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

struct RaiseRotaryPass
    : mlir::folio::impl::FolioRaiseRotaryPassBase<RaiseRotaryPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto &shapes = getAnalysis<ONNXShapeAnalysis>();
    if (!shapes.succeeded())
      return signalPassFailure();
    ONNXShapeInference &inference = shapes.get();
    if (tablePositions < 2) {
      func.emitError() << "folio-raise-rotary: table-positions must be at "
                          "least 2, got "
                       << tablePositions;
      return signalPassFailure();
    }

    SmallVector<ONNXNodeOp> nodes;
    func.walk([&](ONNXNodeOp node) { nodes.push_back(node); });
    OpBuilder builder(&getContext());
    ONNXNodeBuilder nb(builder, inference, getDefaultOpset(func));
    bool failed = false;
    for (ONNXNodeOp node : nodes) {
      LogicalResult result = success();
      if (node.getOpType() == "Add" && node.getDomain().empty())
        result = raiseDecomposed(func, node, inference, nb);
      else if (node.getOpType() == "RotaryEmbedding" &&
               (node.getDomain() == kMicrosoftDomain ||
                (node.getDomain().empty() && node.getOpset() >= 23)))
        result = raiseFused(node, inference, nb);
      failed |= mlir::failed(result);
    }
    if (failed)
      return signalPassFailure();
    eraseDeadOps(func, &inference);
    markAnalysesPreserved<ONNXShapeAnalysis>();
  }

  LogicalResult raiseDecomposed(func::FuncOp func, ONNXNodeOp add,
                                ONNXShapeInference &inference,
                                ONNXNodeBuilder &nb) {
    std::optional<RotaryMatch> match = matchDecomposedRotary(add, inference);
    if (!match)
      return success();
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] rotary at " << describeNode(add)
               << ", rotary_dim " << match->rotaryDim << "\n");
    std::string error;
    auto key = std::make_pair(match->cos, match->sin);
    auto cached = sources.find(key);
    if (cached == sources.end()) {
      FailureOr<RotarySource> source = readComputedAngles(
          func, inference, match->cos, match->sin, match->rotaryDim,
          match->style, /*duplicatedPairs=*/true, tablePositions, error);
      if (mlir::failed(source))
        return add.emitError() << "rotary embedding at node "
                               << describeNode(add) << ": " << error;
      cached = sources.try_emplace(key, std::move(*source)).first;
    }
    RotarySource &source = cached->second;

    // The sequence axis of cos/sin says the layout: [B, H, S, D] (axis 2) or
    // [B, S, H, D] (axis 1, GPT-J rotates before moving heads forward).
    Value input = match->input;
    Operation *root = match->root;
    OpBuilder &b = nb.getBuilder();
    b.setInsertionPoint(root);
    Location loc = root->getLoc();
    std::string name =
        cast<ONNXNodeOp>(root).getNodeName().str() + "/folio_rotary";
    if (source.seqAxis != 1 && source.seqAxis != 2)
      return add.emitError()
             << "rotary embedding at node " << describeNode(add)
             << ": its cos/sin run along dim " << source.seqAxis
             << " of the heads, which is neither [B, H, S, D] nor "
                "[B, S, H, D]";
    bool seqFirst = source.seqAxis == 1;
    if (seqFirst)
      input = nb.transpose(loc, name, input, {0, 2, 1, 3});
    if (!input)
      return failure();
    Value rotary = buildRotary(nb, loc, input, source.positions, source.angles,
                               match->rotaryDim, match->style,
                               /*forceTable=*/source.gathered, source.table);
    Value result = rotary;
    if (seqFirst)
      result = nb.transpose(loc, name, rotary, {0, 2, 1, 3});
    if (!result)
      return failure();
    root->getResult(0).replaceAllUsesWith(result);
    if (seqFirst)
      foldTransposeBack(result, rotary);
    return success();
  }

  /// Transpose(result, [0, 2, 1, 3]) users read `rotary` directly.
  static void foldTransposeBack(Value result, Value rotary) {
    for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
      auto t = dyn_cast<ONNXNodeOp>(user);
      if (!t || t.getOpType() != "Transpose" || !t.getDomain().empty())
        continue;
      auto perm = t.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm");
      if (perm && perm.asArrayRef() == ArrayRef<int64_t>{0, 2, 1, 3} &&
          t.getResult(0).getType() == rotary.getType())
        t.getResult(0).replaceAllUsesWith(rotary);
    }
  }

  LogicalResult raiseFused(ONNXNodeOp node, ONNXShapeInference &inference,
                           ONNXNodeBuilder &nb);

  llvm::DenseMap<std::pair<Value, Value>, RotarySource> sources;
};

} // namespace

/// Opset-23 RotaryEmbedding(X, cos_cache, sin_cache, position_ids?) and
/// com.microsoft RotaryEmbedding(input, position_ids, cos_cache, sin_cache):
/// X is [B, H, S, D] or [B, S, H*D].
LogicalResult RaiseRotaryPass::raiseFused(ONNXNodeOp node,
                                          ONNXShapeInference &inference,
                                          ONNXNodeBuilder &nb) {
  bool microsoft = node.getDomain() == kMicrosoftDomain;
  auto error = [&]() {
    return node.emitError()
           << (microsoft ? "com.microsoft." : "") << "RotaryEmbedding node "
           << describeNode(node) << ": ";
  };
  Value x = getONNXInput(node, 0);
  Value positions = getONNXInput(node, microsoft ? 1 : 3);
  Value cos = getONNXInput(node, microsoft ? 2 : 1);
  Value sin = getONNXInput(node, microsoft ? 3 : 2);
  if (!x || !cos || !sin)
    return error() << "needs its input and both cos and sin caches";
  if (microsoft && (getONNXIntAttr(node, "is_packed_batching", 0) != 0 ||
                    getONNXFloatAttr(node, "scale", 1.0) != 1.0))
    return error() << "packed batching and a scale other than 1 are not "
                      "supported";
  std::optional<SmallVector<AffineExpr, 4>> dims = getDims(inference, x);
  std::optional<SmallVector<AffineExpr, 4>> cosDims = getDims(inference, cos);
  std::optional<int64_t> pairs;
  if (cosDims && !cosDims->empty())
    pairs = getConstantDim(cosDims->back());
  if (!dims || (dims->size() != 3 && dims->size() != 4) || !pairs)
    return error() << "expects a rank-3 [batch, seq, hidden] or rank-4 "
                      "[batch, heads, seq, head_dim] input and caches with a "
                      "static last dim";
  int64_t rotaryDim = getONNXIntAttr(node, "rotary_embedding_dim", 0);
  if (rotaryDim == 0)
    rotaryDim = 2 * *pairs;
  if (rotaryDim != 2 * *pairs)
    return error() << "rotary_embedding_dim " << rotaryDim
                   << " does not match caches of width " << *pairs;
  int64_t heads = getONNXIntAttr(node, "num_heads", 0);
  if (dims->size() == 3 && heads <= 0) {
    std::optional<int64_t> hidden = getConstantDim(dims->back());
    if (!hidden || *hidden % rotaryDim != 0)
      return error() << "a rank-3 input needs num_heads";
    heads = *hidden / rotaryDim;
  }
  RopeStyle style = getONNXIntAttr(node, "interleaved", 0)
                        ? RopeStyle::interleaved
                        : RopeStyle::half_split;

  if (positions) {
    auto posType = dyn_cast<RankedTensorType>(positions.getType());
    if (!posType || posType.getRank() != 2)
      return error() << "position_ids must be [batch, seq]; a scalar "
                        "position offset is not supported";
  }
  std::string message;
  auto key = std::make_pair(cos, sin);
  auto cached = sources.find(key);
  if (cached != sources.end()) {
    // q and k of one layer share their caches.
  } else if (positions) {
    RotarySource source;
    FailureOr<RotaryAngles> angles =
        readCacheTables(inference, cos, sin, message);
    if (mlir::failed(angles))
      return error() << message;
    source.positions = positions;
    source.angles = std::move(*angles);
    cached = sources.try_emplace(key, std::move(source)).first;
  } else {
    // Without position_ids the caches are per token, [B, S, D/2].
    FailureOr<RotarySource> read = readComputedAngles(
        getOperation(), inference, cos, sin, rotaryDim, style,
        /*duplicatedPairs=*/false, tablePositions, message);
    if (mlir::failed(read))
      return error() << message;
    cached = sources.try_emplace(key, std::move(*read)).first;
  }
  RotarySource &source = cached->second;
  if (positions)
    source.positions = positions;

  OpBuilder &b = nb.getBuilder();
  b.setInsertionPoint(node);
  Location loc = node.getLoc();
  std::string name = node.getNodeName().str() + "/folio_rotary";
  Value input = dims->size() == 3 ? nb.splitHeads(loc, name, x, heads) : x;
  if (!input)
    return error() << "its input cannot be split into " << heads << " heads";
  std::optional<int64_t> headDim = getConstDim(inference, input, 3);
  if (!headDim || *headDim < rotaryDim)
    return error() << "rotary_dim " << rotaryDim << " exceeds the head size";
  Value rotary =
      buildRotary(nb, loc, input, source.positions, source.angles, rotaryDim,
                  style, /*forceTable=*/false, source.table);
  Value result = dims->size() == 3 ? nb.mergeHeads(loc, name, rotary) : rotary;
  if (!result)
    return failure();
  node.getResult(0).replaceAllUsesWith(result);
  return success();
}
