//===- TokenwiseCheck.cpp - Prove a serving entry token-wise --------------===//
//
// Symbolic shape inference gives every value its dims in terms of the
// `num_tokens` symbol; the token axis of a value is the dim equal to it. Each
// op then has a rule for what it may do with that axis.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/TokenwiseCheck.h"

#include "compiler/ONNXOps/Match.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::folio;

namespace {

/// ONNX ops that act element by element (with broadcasting): they cannot
/// move data between tokens.
const llvm::StringSet<> &elementwiseOps() {
  static const llvm::StringSet<> ops = {
      "Abs",      "Add",     "And",         "Cast", "Cos",     "Div",
      "Equal",    "Erf",     "Exp",         "Gelu", "Greater", "GreaterOrEqual",
      "Identity", "Less",    "LessOrEqual", "Log",  "Max",     "Min",
      "Mul",      "Neg",     "Not",         "Or",   "Pow",     "Reciprocal",
      "Relu",     "Sigmoid", "Sin",         "Sqrt", "Sub",     "Tanh",
      "Where",    "Softplus"};
  return ops;
}

/// Ops whose output is the input rearranged without crossing rows, provided
/// the token axis survives as its own dim.
const llvm::StringSet<> &layoutOps() {
  static const llvm::StringSet<> ops = {"Reshape",   "Expand",    "Squeeze",
                                        "Unsqueeze", "Transpose", "Flatten"};
  return ops;
}

/// The inputs of an op that are sizes, indices or axes rather than data:
/// the token count may flow into them (a Reshape to [1, T, 4, 8]).
bool isShapeOperand(StringRef op, unsigned index) {
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "Unsqueeze" ||
      op == "Squeeze" || op == "Split" || op == "CumSum" ||
      op.starts_with("Reduce"))
    return index == 1;
  if (op == "Slice")
    return index >= 1;
  if (op == "ConstantOfShape")
    return index == 0;
  if (op == "Pad")
    return index == 1 || index == 3;
  return false;
}

/// Ops that may give a value a token axis it did not have: they repeat one
/// value for every token (Expand broadcasts a size-1 dim, ConstantOfShape
/// fills), so no token's row depends on where it sits in the batch.
bool repeatsAlongNewAxes(StringRef op) {
  return op == "Expand" || op == "ConstantOfShape";
}

class Checker {
public:
  explicit Checker(func::FuncOp func)
      : func(func), inference(func.getContext()) {}

  LogicalResult run() {
    if (failed(inference.run(func)))
      return failure();
    tokenDim = inference.getNamedDim(kNumTokensDim);
    tokenSymbol = cast<AffineSymbolExpr>(tokenDim).getPosition();
    WalkResult walk = func.walk([&](Operation *op) {
      return failed(check(op)) ? WalkResult::interrupt()
                               : WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

private:
  /// The axes of `v` whose size is the token count.
  SmallVector<int64_t> tokenAxes(Value v) {
    SmallVector<int64_t> axes;
    const ONNXValueFacts *facts = inference.lookup(v);
    if (!facts || !facts->dims)
      return axes;
    for (auto [i, dim] : llvm::enumerate(*facts->dims))
      if (dim && dim == tokenDim)
        axes.push_back(i);
    return axes;
  }
  bool hasTokens(Value v) { return !tokenAxes(v).empty(); }
  bool anyOperandHasTokens(Operation *op) {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) { return hasTokens(v); });
  }
  int64_t rankOf(Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type ? type.getRank() : -1;
  }
  bool tokenAxisIsLast(Value v) {
    return llvm::is_contained(tokenAxes(v), rankOf(v) - 1);
  }
  LogicalResult mixes(Operation *op, const Twine &how) {
    return op->emitError() << "is not token-wise: " << how
                           << "; outside attention, each token's row must "
                              "depend only on that token";
  }

  /// True if `axis` (possibly negative) of `v` is a token axis.
  bool isTokenAxis(Value v, int64_t axis) {
    int64_t rank = rankOf(v);
    if (rank < 0)
      return hasTokens(v);
    if (axis < 0)
      axis += rank;
    return llvm::is_contained(tokenAxes(v), axis);
  }

  /// True if the value of `v` (not its shape) depends on the token count:
  /// a Shape of a token-carrying value, and what is computed from one
  /// without a token axis of its own (Gather(Shape(x), 1), its Cast).
  bool isCountValue(Value v) { return countValues.contains(v); }

  /// Records which results of `node` carry the token count as a value.
  void trackCountValues(ONNXNodeOp node) {
    StringRef op = node.getOpType();
    for (Value result : node.getResults()) {
      if (hasTokens(result))
        continue;
      const ONNXValueFacts *facts = inference.lookup(result);
      if (facts && facts->ints) {
        // Known elements say it exactly (Gather(Shape(x), 2) is the hidden
        // size).
        if (llvm::any_of(*facts->ints, [&](AffineExpr e) {
              return !e || e.isFunctionOfSymbol(tokenSymbol);
            }))
          countValues.insert(result);
        continue;
      }
      bool fromCount =
          ((op == "Shape" || op == "Size") && hasTokens(node.getInputs()[0])) ||
          llvm::any_of(node.getInputs(),
                       [&](Value in) { return isCountValue(in); });
      if (fromCount)
        countValues.insert(result);
    }
  }

  LogicalResult checkONNX(ONNXNodeOp node) {
    StringRef op = node.getOpType();
    bool resultHasTokens =
        llvm::any_of(node.getResults(), [&](Value r) { return hasTokens(r); });
    if (resultHasTokens && node.getDomain().empty()) {
      // Data made from the token count: it follows the batch's layout
      // (Range(0, T) numbers the flattened batch, not each sequence).
      if (!anyOperandHasTokens(node) && !repeatsAlongNewAxes(op))
        return node.emitError()
               << "is not token-wise: ONNX op " << op
               << " makes a token axis from a size, so each token's value "
                  "is its index in the flattened batch, which depends on how "
                  "the batch is laid out rather than on the token; positions "
                  "must come from position_ids or a computation page-kv "
                  "proves equal to them";
      for (unsigned i = 0; i < node.getNumONNXInputs(); ++i)
        if (Value in = getONNXInput(node, i);
            in && isCountValue(in) && !isShapeOperand(op, i))
          return node.emitError()
                 << "is not token-wise: its input " << i
                 << " is computed from the number of tokens in the batch, so "
                    "each token's result depends on the rest of the batch";
    }
    trackCountValues(node);
    if (!anyOperandHasTokens(node))
      return success();
    if (!node.getDomain().empty())
      return mixes(node, "ONNX op " + node.getDomain() + "." + op +
                             " has no token-wise rule");
    if (elementwiseOps().contains(op) || op == "Shape")
      return success();
    if (layoutOps().contains(op)) {
      if (node.getResults().empty() || !hasTokens(node.getResult(0)))
        return mixes(node, "it merges or drops the token axis");
      return success();
    }
    Value x = node.getInputs()[0];
    if (op == "MatMul" || op == "Gemm") {
      Value w = node.getInputs()[1];
      if (hasTokens(w))
        return mixes(node, "both operands carry tokens (attention that was "
                           "not raised)");
      if (tokenAxisIsLast(x))
        return mixes(node, "it contracts the token axis");
      return success();
    }
    if (op == "Softmax" || op == "LogSoftmax" || op == "CumSum" ||
        op == "Concat" || op == "Split" || op == "Gather") {
      int64_t axis = getONNXIntAttr(node, "axis", op == "Softmax" ? -1 : 0);
      if (op == "CumSum")
        if (std::optional<double> a = getScalarConstant(getONNXInput(node, 1)))
          axis = int64_t(*a);
      if (op == "Gather" && !hasTokens(x))
        return success(); // Token-indexed lookups (embeddings).
      if (op == "Concat") {
        for (Value in : node.getInputs())
          if (isTokenAxis(in, axis))
            return mixes(node, "it concatenates along the token axis");
        return success();
      }
      if (isTokenAxis(x, axis))
        return mixes(node, op + " runs along the token axis");
      return success();
    }
    if (op.starts_with("Reduce")) {
      std::optional<SmallVector<int64_t>> axes;
      if (Value given = getONNXInput(node, 1))
        axes = getIntConstants(given);
      else if (auto attr =
                   node.getOnnxAttributes().getAs<DenseI64ArrayAttr>("axes"))
        axes = SmallVector<int64_t>(attr.asArrayRef());
      if (!axes)
        return mixes(node, "it reduces over all axes, the token axis too");
      for (int64_t axis : *axes)
        if (isTokenAxis(x, axis))
          return mixes(node, "it reduces over the token axis");
      return success();
    }
    if (op == "Slice") {
      std::optional<SmallVector<int64_t>> axes;
      if (Value given = getONNXInput(node, 3))
        axes = getIntConstants(given);
      if (!axes)
        return mixes(node, "Slice without constant axes may cut the token "
                           "axis");
      for (int64_t axis : *axes)
        if (isTokenAxis(x, axis))
          return mixes(node, "it slices the token axis");
      return success();
    }
    return mixes(node, "ONNX op " + op + " has no token-wise rule");
  }

  LogicalResult check(Operation *op) {
    if (auto node = dyn_cast<ONNXNodeOp>(op))
      return checkONNX(node);
    if (isa<AttentionOp>(op))
      return op->emitError("folio.attention is left after page-kv");
    if (isa<LinearOp, RMSNormOp, LayerNormOp, GatedMLPOp>(op)) {
      if (tokenAxisIsLast(op->getOperand(0)))
        return mixes(op, "it works across the token axis");
      for (Value weight : op->getOperands().drop_front())
        if (hasTokens(weight))
          return mixes(op, "a weight operand carries tokens");
      return success();
    }
    // The paged ops mix tokens by design; the rest move or index rows.
    return success();
  }

  func::FuncOp func;
  ONNXShapeInference inference;
  AffineExpr tokenDim;
  unsigned tokenSymbol = 0;
  llvm::DenseSet<Value> countValues;
};

} // namespace

LogicalResult mlir::folio::checkTokenwise(func::FuncOp func) {
  return Checker(func).run();
}
