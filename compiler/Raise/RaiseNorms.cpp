//===- RaiseNorms.cpp - RMSNorm and LayerNorm subgraphs to folio ops ------===//

#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/Raise/Passes.h"

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/Match.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "folio-raise-norms"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIORAISENORMSPASS
#include "compiler/Raise/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

/// Both operand orders of a commutative binary node: (node, lhs, rhs) with
/// `pred(lhs)` holding, or nullopt.
template <typename Pred>
std::optional<std::pair<Value, Value>> commuted(ONNXNodeOp node, Pred pred) {
  if (!node || node.getInputs().size() != 2)
    return std::nullopt;
  Value a = node.getInputs()[0], b = node.getInputs()[1];
  if (pred(a))
    return std::make_pair(a, b);
  if (pred(b))
    return std::make_pair(b, a);
  return std::nullopt;
}

/// A 1-D constant of `width` elements (a norm's weight or bias).
bool isVectorConstant(Value v, int64_t width) {
  if (!v.getDefiningOp<arith::ConstantOp>())
    return false;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == 1 &&
         (ShapedType::isDynamic(width) || type.getDimSize(0) == width);
}

/// The width of the last axis of a ranked tensor value.
int64_t lastDim(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() > 0 ? type.getShape().back()
                                    : ShapedType::kDynamic;
}

/// ReduceMean over exactly the last axis with keepdims, of `x`'s rank.
Value matchMeanOverLastAxis(Value v) {
  ONNXNodeOp mean = matchONNX(v, "ReduceMean");
  if (!mean || getONNXIntAttr(mean, "keepdims", 1) != 1)
    return {};
  Value data = getONNXInput(mean, 0);
  auto type = dyn_cast<RankedTensorType>(data.getType());
  if (!type)
    return {};
  SmallVector<int64_t> axes;
  if (Value axesInput = getONNXInput(mean, 1)) {
    std::optional<SmallVector<int64_t>> given = getIntConstants(axesInput);
    if (!given)
      return {};
    axes = *given;
  } else if (auto attr =
                 mean.getOnnxAttributes().getAs<DenseI64ArrayAttr>("axes")) {
    axes.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  }
  int64_t rank = type.getRank();
  if (axes.size() != 1 || (axes[0] != -1 && axes[0] != rank - 1))
    return {};
  return data;
}

/// x^2 as Pow(x, 2) or Mul(x, x).
Value matchSquare(Value v) {
  if (ONNXNodeOp pow = matchONNX(v, "Pow"))
    if (getScalarConstant(getONNXInput(pow, 1)) == 2.0)
      return getONNXInput(pow, 0);
  if (ONNXNodeOp mul = matchONNX(v, "Mul"))
    if (mul.getInputs()[0] == mul.getInputs()[1])
      return mul.getInputs()[0];
  return {};
}

/// sqrt(mean(x^2 over the last axis) + eps) -> (x, eps); or, for
/// LayerNorm, sqrt(var + eps) where the caller checks the centring.
std::optional<std::pair<Value, double>> matchRootMeanSquare(Value v) {
  ONNXNodeOp sqrt = matchONNX(v, "Sqrt");
  if (!sqrt)
    return std::nullopt;
  auto add = commuted(matchONNX(sqrt.getInputs()[0], "Add"),
                      [](Value x) { return getScalarConstant(x).has_value(); });
  if (!add)
    return std::nullopt;
  double eps = *getScalarConstant(add->first);
  Value squared = matchMeanOverLastAxis(add->second);
  if (!squared)
    return std::nullopt;
  Value x = matchSquare(squared);
  if (!x)
    return std::nullopt;
  return std::make_pair(x, eps);
}

/// x * 1/rms, x / rms or x * Reciprocal(rms): returns (x, rms value).
std::optional<std::pair<Value, Value>> matchNormalized(Value v) {
  if (ONNXNodeOp div = matchONNX(v, "Div"))
    return std::make_pair(div.getInputs()[0], div.getInputs()[1]);
  ONNXNodeOp mul = matchONNX(v, "Mul");
  if (!mul)
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    Value x = mul.getInputs()[i], factor = mul.getInputs()[1 - i];
    if (ONNXNodeOp recip = matchONNX(factor, "Reciprocal"))
      return std::make_pair(x, recip.getInputs()[0]);
    if (ONNXNodeOp div = matchONNX(factor, "Div"))
      if (getScalarConstant(div.getInputs()[0]) == 1.0)
        return std::make_pair(x, div.getInputs()[1]);
  }
  return std::nullopt;
}

struct RaiseNormsPass
    : mlir::folio::impl::FolioRaiseNormsPassBase<RaiseNormsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<ONNXNodeOp> nodes;
    func.walk([&](ONNXNodeOp node) { nodes.push_back(node); });
    OpBuilder b(&getContext());
    // LayerNorm first: its (x - mean) / sqrt(mean((x - mean)^2) + eps) * w
    // also reads as an RMSNorm of the centred value.
    for (ONNXNodeOp node : nodes)
      if (node.getOpType() == "Add" && node.getDomain().empty())
        raiseDecomposedLayerNorm(b, node);
    for (ONNXNodeOp node : nodes) {
      if (node->use_empty())
        continue;
      StringRef op = node.getOpType();
      if (op == "Mul")
        raiseRMSNorm(b, node);
      else if (op == "LayerNormalization" && node.getDomain().empty())
        raiseFusedLayerNorm(b, node);
      else if (op == "RMSNormalization" || op == "SimplifiedLayerNormalization")
        raiseFusedRMSNorm(b, node);
      else if (op == "SkipSimplifiedLayerNormalization")
        raiseSkipNorm(b, node, /*rms=*/true);
      else if (op == "SkipLayerNormalization")
        raiseSkipNorm(b, node, /*rms=*/false);
    }
    SmallVector<RMSNormOp> norms;
    func.walk([&](RMSNormOp norm) { norms.push_back(norm); });
    for (RMSNormOp norm : norms)
      keepTokenAxis(b, norm);
    // Facts of the values made here are inferred on demand; those of the
    // ops erased here must go.
    if (auto shapes = getCachedAnalysis<ONNXShapeAnalysis>()) {
      eraseDeadOps(func, &shapes->get().get());
      // New ONNX nodes (keepTokenAxis) have no facts: infer afresh.
      if (!madeONNXNodes)
        markAnalysesPreserved<ONNXShapeAnalysis>();
    } else {
      eraseDeadOps(func);
    }
  }

  /// Whether the fused norm normalizes the last axis of a ranked float input:
  /// what folio.rms_norm and folio.layer_norm take (an input of unknown
  /// rank stays an ONNX node, which later phases name).
  bool normalizesLastAxis(ONNXNodeOp node) {
    auto type = dyn_cast<RankedTensorType>(node.getInputs()[0].getType());
    int64_t axis = getONNXIntAttr(node, "axis", -1);
    return type && isa<FloatType>(type.getElementType()) &&
           (axis == -1 || axis == type.getRank() - 1);
  }

  void replace(ONNXNodeOp node, Value result, unsigned index = 0) {
    node.getResult(index).replaceAllUsesWith(result);
  }

  /// w * (x / rms(x)), in either operand order, with Gemma's (1 + w).
  void raiseRMSNorm(OpBuilder &b, ONNXNodeOp mul) {
    int64_t width = lastDim(mul.getResult(0));
    Value weight, normalized;
    double offset = 0.0;
    for (unsigned i = 0; i < 2 && !weight; ++i) {
      Value w = mul.getInputs()[i];
      if (isVectorConstant(w, width)) {
        weight = w;
      } else if (ONNXNodeOp add = matchONNX(w, "Add")) {
        auto parts =
            commuted(add, [](Value x) { return getScalarConstant(x) == 1.0; });
        if (parts && isVectorConstant(parts->second, width)) {
          weight = parts->second;
          offset = 1.0;
        }
      }
      normalized = mul.getInputs()[1 - i];
    }
    if (!weight)
      return;
    std::optional<std::pair<Value, Value>> scaled = matchNormalized(normalized);
    if (!scaled)
      return;
    std::optional<std::pair<Value, double>> rms =
        matchRootMeanSquare(scaled->second);
    if (!rms || rms->first != scaled->first)
      return;
    Value x = scaled->first;
    if (x.getType() != mul.getResult(0).getType())
      return;
    b.setInsertionPoint(mul);
    auto norm = b.create<RMSNormOp>(mul.getLoc(), x.getType(), x, weight,
                                    b.getF64FloatAttr(rms->second),
                                    b.getF64FloatAttr(offset));
    LLVM_DEBUG(llvm::dbgs() << "raised RMSNorm at " << mul.getLoc() << "\n");
    replace(mul, norm);
  }

  /// (x - mean) / sqrt(var + eps) * w + b, var = mean((x - mean)^2).
  void raiseDecomposedLayerNorm(OpBuilder &b, ONNXNodeOp add) {
    int64_t width = lastDim(add.getResult(0));
    auto biased =
        commuted(add, [&](Value v) { return isVectorConstant(v, width); });
    if (!biased)
      return;
    auto weighted = commuted(matchONNX(biased->second, "Mul"), [&](Value v) {
      return isVectorConstant(v, width);
    });
    if (!weighted)
      return;
    ONNXNodeOp div = matchONNX(weighted->second, "Div");
    if (!div)
      return;
    ONNXNodeOp centred = matchONNX(div.getInputs()[0], "Sub");
    if (!centred)
      return;
    Value x = centred.getInputs()[0];
    if (matchMeanOverLastAxis(centred.getInputs()[1]) != x)
      return;
    std::optional<std::pair<Value, double>> rms =
        matchRootMeanSquare(div.getInputs()[1]);
    if (!rms || rms->first != centred.getResult(0) ||
        x.getType() != add.getResult(0).getType())
      return;
    b.setInsertionPoint(add);
    auto norm =
        b.create<LayerNormOp>(add.getLoc(), x.getType(), x, weighted->first,
                              biased->first, b.getF64FloatAttr(rms->second));
    replace(add, norm);
  }

  void raiseFusedLayerNorm(OpBuilder &b, ONNXNodeOp node) {
    Value x = getONNXInput(node, 0), scale = getONNXInput(node, 1),
          bias = getONNXInput(node, 2);
    if (!normalizesLastAxis(node) || node.getNumResults() != 1 ||
        x.getType() != node.getResult(0).getType())
      return;
    b.setInsertionPoint(node);
    auto norm = b.create<LayerNormOp>(
        node.getLoc(), x.getType(), x, scale, bias,
        b.getF64FloatAttr(getONNXFloatAttr(node, "epsilon", 1e-5)));
    replace(node, norm);
  }

  void raiseFusedRMSNorm(OpBuilder &b, ONNXNodeOp node) {
    Value x = getONNXInput(node, 0), scale = getONNXInput(node, 1);
    // inv_std_var (output 1) has no folio equivalent: leave such nodes.
    if (!normalizesLastAxis(node) ||
        (node.getNumResults() > 1 && !node.getResult(1).use_empty()) ||
        x.getType() != node.getResult(0).getType())
      return;
    b.setInsertionPoint(node);
    auto norm = b.create<RMSNormOp>(
        node.getLoc(), x.getType(), x, scale,
        b.getF64FloatAttr(getONNXFloatAttr(node, "epsilon", 1e-5)),
        b.getF64FloatAttr(0.0));
    replace(node, norm);
  }

  /// A per-head norm written over [b, s * n, D] (ONNX Runtime GenAI's
  /// Qwen3 q/k norms: Reshape [b, s, n*D] -> [0, -1, D], norm, Reshape back
  /// to [0, -1, n*D]) merges the token axis with the heads; the same rows as
  /// [b, s, n, D] keep the token axis, which page-kv requires.
  void keepTokenAxis(OpBuilder &b, RMSNormOp norm) {
    ONNXNodeOp split = matchONNX(norm.getInput(), "Reshape");
    if (!split || !norm.getResult().hasOneUse())
      return;
    ONNXNodeOp merge =
        dyn_cast<ONNXNodeOp>(*norm.getResult().getUsers().begin());
    if (!merge || merge.getOpType() != "Reshape" ||
        !merge.getDomain().empty() || merge.getInputs()[0] != norm.getResult())
      return;
    Value x = split.getInputs()[0];
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    auto normType = dyn_cast<RankedTensorType>(norm.getResult().getType());
    if (!xType || !normType || xType.getRank() != 3 ||
        normType.getRank() != 3 || merge.getResult(0).getType() != xType ||
        getONNXIntAttr(split, "allowzero", 0) != 0 ||
        getONNXIntAttr(merge, "allowzero", 0) != 0)
      return;
    int64_t width = xType.getDimSize(2), d = normType.getDimSize(2);
    if (ShapedType::isDynamic(width) || ShapedType::isDynamic(d) || d <= 0 ||
        width % d != 0 || width == d)
      return;
    std::optional<SmallVector<int64_t>> splitShape =
        getIntConstants(split.getInputs()[1]);
    std::optional<SmallVector<int64_t>> mergeShape =
        getIntConstants(merge.getInputs()[1]);
    if (!splitShape || !mergeShape ||
        *splitShape != SmallVector<int64_t>{0, -1, d} ||
        *mergeShape != SmallVector<int64_t>{0, -1, width})
      return;
    b.setInsertionPoint(merge);
    Location loc = norm.getLoc();
    auto shapeConstant = [&](ArrayRef<int64_t> values) -> Value {
      auto type =
          RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
      return b.create<arith::ConstantOp>(
          loc, DenseIntElementsAttr::get(type, values));
    };
    auto reshape = [&](Value in, ArrayRef<int64_t> shape, Type type,
                       StringRef suffix) {
      return b
          .create<ONNXNodeOp>(
              loc, TypeRange{type}, b.getStringAttr("Reshape"),
              b.getStringAttr(""), split.getOpsetAttr(),
              b.getStringAttr(split.getNodeName().str() + suffix.str()),
              b.getDictionaryAttr({}), b.getDenseI64ArrayAttr({}),
              ValueRange{in, shapeConstant(shape)})
          .getResult(0);
    };
    auto headsType = RankedTensorType::get(
        {xType.getDimSize(0), xType.getDimSize(1), width / d, d},
        xType.getElementType());
    Value heads = reshape(x, {0, 0, width / d, d}, headsType, "/folio_heads");
    auto perHead =
        b.create<RMSNormOp>(loc, headsType, heads, norm.getWeight(),
                            norm.getEpsilonAttr(), norm.getWeightOffsetAttr());
    Value merged = reshape(perHead, {0, 0, width}, xType, "/folio_merge_heads");
    merge.getResult(0).replaceAllUsesWith(merged);
    madeONNXNodes = true;
  }

  bool madeONNXNodes = false;

  /// output = rms_norm(input + skip (+ bias)), or layer_norm(input + skip
  /// (+ bias)) with beta for SkipLayerNormalization; output 3 = that sum.
  void raiseSkipNorm(OpBuilder &b, ONNXNodeOp node, bool rms) {
    Value input = getONNXInput(node, 0), skip = getONNXInput(node, 1),
          gamma = getONNXInput(node, 2);
    Value beta = rms ? Value() : getONNXInput(node, 3);
    Value bias = getONNXInput(node, rms ? 3 : 4);
    for (unsigned i = 1; i < 3 && i < node.getNumResults(); ++i)
      if (!node.getResult(i).use_empty())
        return;
    if (!normalizesLastAxis(node) || input.getType() != skip.getType() ||
        input.getType() != node.getResult(0).getType())
      return;
    b.setInsertionPoint(node);
    auto addNode = [&](Value lhs, Value rhs) {
      return b
          .create<ONNXNodeOp>(
              node.getLoc(), TypeRange{lhs.getType()}, b.getStringAttr("Add"),
              b.getStringAttr(""), b.getI64IntegerAttr(14),
              b.getStringAttr(node.getNodeName().str() + "/skip_add"),
              b.getDictionaryAttr({}), b.getDenseI64ArrayAttr({}),
              ValueRange{lhs, rhs})
          .getResult(0);
    };
    Value sum = addNode(input, skip);
    if (bias)
      sum = addNode(sum, bias);
    double epsilon = getONNXFloatAttr(node, "epsilon", rms ? 1e-5 : 1e-12);
    if (!rms) {
      auto norm =
          b.create<LayerNormOp>(node.getLoc(), sum.getType(), sum, gamma, beta,
                                b.getF64FloatAttr(epsilon));
      replace(node, norm, 0);
      if (node.getNumResults() > 3)
        replace(node, sum, 3);
      return;
    }
    auto norm =
        b.create<RMSNormOp>(node.getLoc(), sum.getType(), sum, gamma,
                            b.getF64FloatAttr(epsilon), b.getF64FloatAttr(0.0));
    replace(node, norm, 0);
    if (node.getNumResults() > 3)
      replace(node, sum, 3);
  }
};

} // namespace
