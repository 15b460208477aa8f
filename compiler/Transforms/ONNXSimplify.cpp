//===- ONNXSimplify.cpp - Fold shape subgraphs, drop no-op ONNX nodes -----===//

#include "compiler/ONNXOps/DeadOps.h"
#include "compiler/ONNXOps/Match.h"
#include "compiler/ONNXOps/ShapeAnalysis.h"
#include "compiler/ONNXOps/ShapeInference.h"
#include "compiler/RaiseAttention/RaiseUtils.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "folio-onnx-simplify"

namespace mlir::folio {
#define GEN_PASS_DEF_FOLIOONNXSIMPLIFYPASS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::folio

using namespace mlir;
using namespace mlir::folio;

namespace {

/// The constant a fully known value stands for, or null.
DenseElementsAttr constantFor(const ONNXValueFacts &facts) {
  auto type = dyn_cast<RankedTensorType>(facts.getType());
  if (!type || !type.hasStaticShape())
    return {};
  Type element = type.getElementType();
  if (facts.ints) {
    std::optional<SmallVector<int64_t, 4>> values = facts.getConstantInts();
    if (!values || int64_t(values->size()) != type.getNumElements())
      return {};
    if (element.isInteger(1)) {
      SmallVector<bool> bits(values->begin(), values->end());
      return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
    }
    SmallVector<APInt> ints;
    for (int64_t v : *values)
      ints.push_back(APInt(element.getIntOrFloatBitWidth(), v, true));
    return DenseElementsAttr::get(type, ints);
  }
  if (facts.floats && isa<FloatType>(element)) {
    if (int64_t(facts.floats->size()) != type.getNumElements())
      return {};
    SmallVector<APFloat> floats;
    for (double v : *facts.floats) {
      APFloat value(v);
      bool losesInfo = false;
      value.convert(cast<FloatType>(element).getFloatSemantics(),
                    APFloat::rmNearestTiesToEven, &losesInfo);
      floats.push_back(value);
    }
    return DenseElementsAttr::get(type, floats);
  }
  return {};
}

bool sameDims(const ONNXValueFacts &a, const ONNXValueFacts &b) {
  if (!a.dims || !b.dims || a.dims->size() != b.dims->size())
    return false;
  for (auto [x, y] : llvm::zip(*a.dims, *b.dims))
    if (!x || !y || x != y)
      return false;
  return true;
}

/// The one input of a Concat that is not empty along the axis, when every
/// other input is known to be: partial rotary with nothing left to pass
/// through (Phi-3 rotates whole heads) concatenates the rotated part with
/// an empty slice. `out` is the Concat's result.
Value nonEmptyConcatInput(ONNXNodeOp node, ONNXShapeInference &inference,
                          const ONNXValueFacts &out) {
  auto axisAttr = node.getOnnxAttributes().getAs<IntegerAttr>("axis");
  std::optional<int64_t> rank = out.getRank();
  if (!axisAttr || !rank)
    return {};
  int64_t axis = axisAttr.getInt();
  if (axis < 0)
    axis += *rank;
  if (axis < 0 || axis >= *rank)
    return {};
  Value kept;
  for (Value input : node.getInputs()) {
    const ONNXValueFacts *facts = inference.lookup(input);
    if (!facts || !facts->dims || int64_t(facts->dims->size()) != *rank)
      return {};
    if (getConstantDim((*facts->dims)[axis]) == 0)
      continue;
    if (kept)
      return {};
    kept = input;
  }
  // ONNX requires the inputs to agree off the axis, so the result is that
  // input (the caller casts to the users' type).
  return kept;
}

/// The input a node merely forwards, given the inferred facts.
Value forwardedInput(ONNXNodeOp node, ONNXShapeInference &inference) {
  if (node.getNumResults() != 1 || node.getInputs().empty())
    return {};
  StringRef op = node.getOpType();
  if (!node.getDomain().empty())
    return {};
  Value input = node.getInputs()[0];
  const ONNXValueFacts *in = inference.lookup(input);
  const ONNXValueFacts *out = inference.lookup(node.getResult(0));
  if (!in || !out || in->elementType != out->elementType)
    return {};
  if (op == "Identity" || op == "Cast")
    return input;
  if (op == "Concat" && node.getInputs().size() == 1)
    return input;
  if (op == "Concat")
    return nonEmptyConcatInput(node, inference, *out);
  if (op == "Reshape" || op == "Expand" || op == "Squeeze" ||
      op == "Unsqueeze" || op == "Slice" || op == "Tile")
    return sameDims(*in, *out) ? input : Value();
  if (op == "Transpose") {
    auto perm = node.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm");
    if (!perm)
      return {};
    if (llvm::all_of(llvm::enumerate(perm.asArrayRef()), [](auto pair) {
          return int64_t(pair.index()) == pair.value();
        }))
      return input;
    // A transpose undoing an earlier one (page-kv moves heads around the
    // paged attention and the model moves them back), possibly through
    // tensor.cast views: out dim i = x dim inner[outer[i]].
    ONNXNodeOp earlier = matchONNX(stripTensorCasts(input), "Transpose");
    if (!earlier)
      return {};
    auto innerPerm =
        earlier.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm");
    if (!innerPerm || innerPerm.size() != perm.size())
      return {};
    for (auto [i, p] : llvm::enumerate(perm.asArrayRef()))
      if (p < 0 || p >= int64_t(innerPerm.size()) || innerPerm[p] != int64_t(i))
        return {};
    return earlier.getInputs()[0];
  }
  return {};
}

/// A zero point's value: one element (or a splat) of an 8-bit integer
/// constant, or 0 when absent.
std::optional<int64_t> zeroPointOf(Value v) {
  if (!v)
    return 0;
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  if (!dense || (!dense.isSplat() && dense.getNumElements() != 1))
    return std::nullopt;
  auto type = dyn_cast<IntegerType>(dense.getElementType());
  if (!type || type.getWidth() != 8)
    return std::nullopt;
  APInt value = *dense.getValues<APInt>().begin();
  return type.isUnsigned() ? int64_t(value.getZExtValue())
                           : value.getSExtValue();
}

/// Static quantization's QDQ pair on an activation, per tensor:
/// DequantizeLinear(QuantizeLinear(x, s, zq), t, zd) is
///   (saturate(round(x / s) + zq) - zd) * t
/// = (r + zq - zd) * t, r = round(clamp(x / s, qmin - zq, qmax - zq)),
/// which is float arithmetic on x: clamping before rounding is the same
/// as after (the bounds are integers), and round-half-to-even is
/// (v + 1.5 * 2^23) - 1.5 * 2^23 in f32 for |v| <= 2^22 (after the clamp,
/// |v| <= 510). The pair becomes those ONNX nodes, which every later pass
/// treats as the elementwise ops they are. Returns the replacement of the
/// DequantizeLinear, or null when the pair is not of that form (then the
/// nodes stay and the compiler refuses them by name).
Value expandFakeQuantization(ONNXNodeOp dq, ONNXShapeInference &inference,
                             OpBuilder &builder) {
  ONNXNodeOp q = matchONNX(getONNXInput(dq, 0), "QuantizeLinear");
  if (!q)
    return {};
  Value x = getONNXInput(q, 0);
  auto xType = dyn_cast<RankedTensorType>(x.getType());
  auto outType = dyn_cast<RankedTensorType>(dq.getResult(0).getType());
  auto codeType = dyn_cast<RankedTensorType>(q.getResult(0).getType());
  if (!xType || !xType.getElementType().isF32() || !outType ||
      !outType.getElementType().isF32() || !codeType ||
      !codeType.getElementType().isInteger(8))
    return {};
  std::optional<double> s = getScalarConstant(getONNXInput(q, 1));
  std::optional<double> t = getScalarConstant(getONNXInput(dq, 1));
  std::optional<int64_t> zq = zeroPointOf(getONNXInput(q, 2));
  std::optional<int64_t> zd = zeroPointOf(getONNXInput(dq, 2));
  if (!s || !t || !zq || !zd || !(*s > 0) || !std::isfinite(*s) ||
      !std::isfinite(*t))
    return {};
  bool isUnsigned = codeType.getElementType().isUnsignedInteger();
  int64_t qmin = isUnsigned ? 0 : -128, qmax = isUnsigned ? 255 : 127;
  builder.setInsertionPoint(dq);
  ONNXNodeBuilder nodes(builder, inference, dq.getOpset());
  Location loc = dq.getLoc();
  std::string name = dq.getNodeName().str();
  auto scalar = [&](double v) {
    auto type = RankedTensorType::get({}, builder.getF32Type());
    return nodes.constant(loc, DenseElementsAttr::get(type, float(v)));
  };
  const double roundBias = 12582912.0; // 1.5 * 2^23
  Value v = nodes.create(loc, "Div", name + "/scale", {x, scalar(*s)});
  if (v)
    v = nodes.create(loc, "Max", name + "/min",
                     {v, scalar(double(qmin - *zq))});
  if (v)
    v = nodes.create(loc, "Min", name + "/max",
                     {v, scalar(double(qmax - *zq))});
  if (v)
    v = nodes.create(loc, "Add", name + "/round", {v, scalar(roundBias)});
  if (v)
    v = nodes.create(loc, "Sub", name + "/rounded", {v, scalar(roundBias)});
  if (v && *zq != *zd)
    v = nodes.create(loc, "Add", name + "/zero",
                     {v, scalar(double(*zq - *zd))});
  if (v)
    v = nodes.create(loc, "Mul", name + "/dequantize", {v, scalar(*t)});
  if (!v)
    return {};
  Type type = dq.getResult(0).getType();
  if (v.getType() != type) {
    // Keep users' types, as for forwarded inputs.
    if (!tensor::CastOp::areCastCompatible(v.getType(), type))
      return {};
    v = builder.create<tensor::CastOp>(loc, type, v);
  }
  return v;
}

/// GatherND with batch_dims 0 and constant indices one coordinate deep,
/// [..., 1], is Gather on axis 0 with those indices less their last dim:
/// both give indices.shape[:-1] + data.shape[1:], row for row (negative
/// indices alike). torch.export writes `x[:, :, [i]]` this way (Falcon's
/// key and value heads out of its fused QKV); as Gather it is data
/// movement the later passes know. Returns the Gather, or null.
Value gatherNDAsGather(ONNXNodeOp node, ONNXShapeInference &inference,
                       OpBuilder &builder) {
  if (node.getOpType() != "GatherND" || !node.getDomain().empty() ||
      node.getInputs().size() != 2 || node.getNumResults() != 1 ||
      getONNXIntAttr(node, "batch_dims", 0) != 0)
    return {};
  Value indices = node.getInputs()[1];
  auto type = dyn_cast<RankedTensorType>(indices.getType());
  std::optional<SmallVector<int64_t>> values = getIntConstants(indices);
  const ONNXValueFacts *facts = inference.lookup(node.getResult(0));
  if (!type || !type.hasStaticShape() || type.getRank() < 1 ||
      type.getShape().back() != 1 || !values || !facts)
    return {};
  auto flatType =
      RankedTensorType::get(type.getShape().drop_back(), builder.getI64Type());
  builder.setInsertionPoint(node);
  auto flatValue = DenseElementsAttr::get(flatType, ArrayRef(*values));
  auto flat = builder.create<arith::ConstantOp>(node.getLoc(), flatValue);
  inference.setFacts(flat, inference.factsForConstant(flatValue));
  auto gather = builder.create<ONNXNodeOp>(
      node.getLoc(), TypeRange{node.getResult(0).getType()}, "Gather", "",
      node.getOpset(), node.getNodeName(),
      builder.getDictionaryAttr(
          builder.getNamedAttr("axis", builder.getI64IntegerAttr(0))),
      ArrayRef<int64_t>{}, ValueRange{node.getInputs()[0], flat});
  inference.setFacts(gather.getResult(0), *facts);
  return gather.getResult(0);
}

struct ONNXSimplifyPass
    : mlir::folio::impl::FolioONNXSimplifyPassBase<ONNXSimplifyPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto &shapes = getAnalysis<ONNXShapeAnalysis>();
    if (!shapes.succeeded())
      return signalPassFailure();
    ONNXShapeInference &inference = shapes.get();

    OpBuilder builder(&getContext());
    SmallVector<ONNXNodeOp> nodes;
    func.walk([&](ONNXNodeOp node) { nodes.push_back(node); });
    for (ONNXNodeOp node : nodes) {
      // Folding first: a folded Reshape of a shape vector is a constant.
      bool folded = false;
      if (node.getNumResults() == 1) {
        const ONNXValueFacts *facts = inference.lookup(node.getResult(0));
        DenseElementsAttr value;
        if (node.getOpType() == "Constant" && node.getDomain().empty())
          if (auto attr = node.getOnnxAttributes().getAs<ElementsAttr>("value"))
            if (attr.getType() == node.getResult(0).getType())
              value = dyn_cast<DenseElementsAttr>(attr);
        if (!value && facts)
          value = constantFor(*facts);
        if (!value && node.getOpType() == "Constant" &&
            node.getDomain().empty()) {
          // Large constants (resources) keep their attribute as is.
          if (auto attr =
                  node.getOnnxAttributes().getAs<ElementsAttr>("value")) {
            builder.setInsertionPoint(node);
            auto constant =
                builder.create<arith::ConstantOp>(node.getLoc(), attr);
            node.getResult(0).replaceAllUsesWith(constant);
            inference.setFacts(constant, inference.factsForConstant(attr));
            folded = true;
          }
        }
        if (value) {
          builder.setInsertionPoint(node);
          auto constant =
              builder.create<arith::ConstantOp>(node.getLoc(), value);
          node.getResult(0).replaceAllUsesWith(constant.getResult());
          inference.setFacts(constant, inference.factsForConstant(value));
          folded = true;
        }
      }
      if (folded)
        continue;
      if (node.getOpType() == "DequantizeLinear" && node.getDomain().empty())
        if (Value expanded = expandFakeQuantization(node, inference, builder)) {
          node.getResult(0).replaceAllUsesWith(expanded);
          continue;
        }
      if (Value gather = gatherNDAsGather(node, inference, builder)) {
        node.getResult(0).replaceAllUsesWith(gather);
        continue;
      }
      if (Value input = forwardedInput(node, inference)) {
        Type type = node.getResult(0).getType();
        if (input.getType() != type) {
          // Keep users' types: a static dim here may be dynamic there.
          if (!tensor::CastOp::areCastCompatible(input.getType(), type))
            continue;
          builder.setInsertionPoint(node);
          input = builder.create<tensor::CastOp>(node.getLoc(), type, input);
        }
        node.getResult(0).replaceAllUsesWith(input);
        continue;
      }
      // Refine types to what inference knows now (dims may have become
      // constant after folding upstream).
      for (Value result : node.getResults())
        if (const ONNXValueFacts *facts = inference.lookup(result))
          if (facts->getType() != result.getType() &&
              !result.getUses().empty() &&
              llvm::all_of(result.getUsers(), [](Operation *user) {
                return isa<ONNXNodeOp>(user);
              }))
            result.setType(facts->getType());
    }

    eraseDeadOps(func, &inference);
    markAnalysesPreserved<ONNXShapeAnalysis>();
  }
};

} // namespace
