//===- RaiseUtils.cpp - Shared pieces of the attention raise passes -------===//

#include "compiler/RaiseAttention/RaiseUtils.h"

#include "compiler/ONNXOps/Match.h"
#include "compiler/RaiseAttention/Evaluator.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::folio;

static AffineExpr dimSymbol(ONNXShapeInference &inf, Value value, int64_t i) {
  std::optional<SmallVector<AffineExpr, 4>> dims = getDims(inf, value);
  if (!dims || int64_t(dims->size()) <= i)
    return {};
  AffineExpr expr = (*dims)[i];
  return isa_and_nonnull<AffineSymbolExpr>(expr) ? expr : AffineExpr();
}

/// The present `past` reaches through `user`: Concat(past, new) on the
/// sequence axis, or the present output of a fused attention op that takes
/// the past (ONNX's and both of ONNX Runtime's), which has the past's heads
/// and head size.
static Value presentOf(Operation *user, Value past) {
  auto node = dyn_cast<ONNXNodeOp>(user);
  if (!node)
    return {};
  StringRef type = node.getOpType();
  bool onnx = node.getDomain().empty(),
       microsoft = node.getDomain() == kMicrosoftDomain;
  if (onnx && type == "Concat" && getONNXInput(node, 0) == past &&
      llvm::is_contained(ArrayRef<int64_t>{2, -2},
                         getONNXIntAttr(node, "axis", 0)))
    return node.getResult(0);
  // The ONNX input of past_key; past_value follows it, and the presents
  // are outputs 1 and 2.
  unsigned pastKey = onnx && type == "Attention"                  ? 4
                     : microsoft && type == "MultiHeadAttention"  ? 6
                     : microsoft && type == "GroupQueryAttention" ? 3
                                                                  : 0;
  for (unsigned i = 0; pastKey && i < 2; ++i)
    if (getONNXInput(node, pastKey + i) == past && i + 1 < node.getNumResults())
      return node.getResult(i + 1);
  return {};
}

GraphInputs GraphInputs::find(func::FuncOp func,
                              ONNXShapeInference &inference) {
  GraphInputs inputs;
  for (BlockArgument arg : func.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  "folio.onnx_name");
    StringRef n = name ? name.getValue() : StringRef();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    if (n == "input_ids")
      inputs.inputIds = arg;
    else if (n == "attention_mask")
      inputs.attentionMask = arg;
    else if (n == "position_ids")
      inputs.positionIds = arg;
    else if (type.getRank() == 4 && isa<FloatType>(type.getElementType()) &&
             (n.contains("past") || n.contains("cache")))
      inputs.past.push_back(arg);
  }
  if (inputs.inputIds) {
    inputs.batch = dimSymbol(inference, inputs.inputIds, 0);
    inputs.seq = dimSymbol(inference, inputs.inputIds, 1);
  }
  if (inputs.attentionMask) {
    if (!inputs.batch)
      inputs.batch = dimSymbol(inference, inputs.attentionMask, 0);
    inputs.total = dimSymbol(inference, inputs.attentionMask, 1);
  }
  if (!inputs.past.empty())
    inputs.pastLen = dimSymbol(inference, inputs.past.front(), 2);
  for (Value past : inputs.past)
    for (Operation *user : past.getUsers())
      if (Value present = presentOf(user, past))
        for (int64_t d : {1, 3})
          if (AffineExpr symbol = dimSymbol(inference, past, d))
            if (std::optional<int64_t> c = getConstDim(inference, present, d))
              inputs.fixedDims.emplace_back(symbol, *c);
  return inputs;
}

void GraphInputs::bindDims(ONNXEvaluator &evaluator, int64_t batchSize,
                           int64_t newTokens, int64_t pastTokens) const {
  evaluator.bindSymbol(batch, batchSize);
  evaluator.bindSymbol(seq, newTokens);
  evaluator.bindSymbol(pastLen, pastTokens);
  evaluator.bindSymbol(total, pastTokens + newTokens);
  for (auto [symbol, value] : fixedDims)
    evaluator.bindSymbol(symbol, value);
}

std::string mlir::folio::describeNode(Operation *op) {
  if (auto node = dyn_cast<ONNXNodeOp>(op)) {
    if (!node.getNodeName().empty())
      return "'" + node.getNodeName().str() + "'";
    return "'" + node.getOpType().str() + "'";
  }
  return "'" + op->getName().getStringRef().str() + "'";
}

std::optional<SmallVector<AffineExpr, 4>>
mlir::folio::getDims(ONNXShapeInference &inf, Value value) {
  const ONNXValueFacts *facts = inf.lookup(value);
  if (!facts) {
    inf.setFacts(value, inf.factsForType(value.getType()));
    facts = inf.lookup(value);
  }
  return facts->dims;
}

std::optional<int64_t> mlir::folio::getConstDim(ONNXShapeInference &inf,
                                                Value value, int64_t i) {
  std::optional<SmallVector<AffineExpr, 4>> dims = getDims(inf, value);
  if (!dims || i < 0 || i >= int64_t(dims->size()))
    return std::nullopt;
  return getConstantDim((*dims)[i]);
}

bool mlir::folio::haveSameDims(ONNXShapeInference &inf, Value a, Value b) {
  std::optional<SmallVector<AffineExpr, 4>> da = getDims(inf, a),
                                            db = getDims(inf, b);
  if (!da || !db || da->size() != db->size())
    return false;
  for (auto [x, y] : llvm::zip(*da, *db))
    if (!x || x != y)
      return false;
  return true;
}

bool mlir::folio::haveCompatibleDims(ONNXShapeInference &inf, Value a,
                                     Value b) {
  std::optional<SmallVector<AffineExpr, 4>> da = getDims(inf, a),
                                            db = getDims(inf, b);
  if (!da || !db || da->size() != db->size())
    return false;
  for (auto [x, y] : llvm::zip(*da, *db))
    if (x && y && x != y)
      return false;
  return true;
}

std::optional<int64_t> mlir::folio::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

int64_t mlir::folio::getDefaultOpset(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (module)
    if (auto opsets =
            module->getAttrOfType<DictionaryAttr>("folio.onnx.opsets"))
      if (auto v = opsets.getAs<IntegerAttr>("ai.onnx"))
        return v.getInt();
  return 17;
}

Value ONNXNodeBuilder::create(Location loc, StringRef opType,
                              StringRef nodeName, ValueRange inputs,
                              ArrayRef<NamedAttribute> attributes) {
  DictionaryAttr attrs = builder.getDictionaryAttr(attributes);
  SmallVector<const ONNXValueFacts *> facts;
  for (Value input : inputs) {
    if (!inference.lookup(input))
      inference.setFacts(input, inference.factsForType(input.getType()));
    facts.push_back(inference.lookup(input));
  }
  SmallVector<ONNXValueFacts> results;
  if (failed(inference.inferNode(kONNXDomain, opType, opset, attrs, facts, 1,
                                 loc, results)))
    return {};
  auto node = builder.create<ONNXNodeOp>(loc, TypeRange{results[0].getType()},
                                         opType, "", uint64_t(opset), nodeName,
                                         attrs, ArrayRef<int64_t>{}, inputs);
  inference.setFacts(node.getResult(0), std::move(results[0]));
  return node.getResult(0);
}

Value ONNXNodeBuilder::constant(Location loc, DenseElementsAttr value) {
  auto op = builder.create<arith::ConstantOp>(loc, value);
  inference.setFacts(op.getResult(), inference.factsForConstant(value));
  return op.getResult();
}

Value ONNXNodeBuilder::constI64(Location loc, ArrayRef<int64_t> values,
                                bool scalar) {
  auto type = RankedTensorType::get(
      scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{int64_t(values.size())},
      builder.getI64Type());
  return constant(loc, DenseElementsAttr::get(type, values));
}

/// The permutation a Transpose node applies, if it has one.
static std::optional<SmallVector<int64_t>> getPerm(ONNXNodeOp node) {
  auto perm = node.getOnnxAttributes().getAs<DenseI64ArrayAttr>("perm");
  if (!perm)
    return std::nullopt;
  return SmallVector<int64_t>(perm.asArrayRef());
}

Value ONNXNodeBuilder::transpose(Location loc, StringRef name, Value value,
                                 ArrayRef<int64_t> perm) {
  // Transpose(Transpose(x, p), q) == x when the two cancel.
  if (ONNXNodeOp inner = matchONNX(value, "Transpose"))
    if (std::optional<SmallVector<int64_t>> p = getPerm(inner);
        p && p->size() == perm.size()) {
      bool identity = true;
      for (auto [i, q] : llvm::enumerate(perm))
        identity &= (*p)[q] == int64_t(i);
      if (identity)
        return inner.getInputs()[0];
    }
  return create(
      loc, "Transpose", name, value,
      builder.getNamedAttr("perm", builder.getDenseI64ArrayAttr(perm)));
}

Value ONNXNodeBuilder::splitHeads(Location loc, StringRef name, Value value,
                                  int64_t heads) {
  std::optional<SmallVector<AffineExpr, 4>> dims = getDims(inference, value);
  if (!dims)
    return {};
  if (dims->size() == 4)
    return value;
  if (dims->size() != 3)
    return {};
  std::optional<int64_t> hidden = getConstantDim((*dims)[2]);
  if (!hidden || heads <= 0 || *hidden % heads != 0)
    return {};
  // Undo an earlier mergeHeads rather than stacking reshapes.
  if (ONNXNodeOp reshape = matchONNX(value, "Reshape"))
    if (ONNXNodeOp t = matchONNX(reshape.getInputs()[0], "Transpose"))
      if (getPerm(t) == SmallVector<int64_t>{0, 2, 1, 3} &&
          getConstDim(inference, t.getInputs()[0], 1) == heads)
        return t.getInputs()[0];
  Value shape = constI64(loc, {0, 0, heads, *hidden / heads});
  Value split = create(loc, "Reshape", name, {value, shape});
  if (!split)
    return {};
  return transpose(loc, name, split, {0, 2, 1, 3});
}

Value ONNXNodeBuilder::mergeHeads(Location loc, StringRef name, Value value) {
  Value t = transpose(loc, name, value, {0, 2, 1, 3});
  if (!t)
    return {};
  return create(loc, "Reshape", name, {t, constI64(loc, {0, 0, -1})});
}
