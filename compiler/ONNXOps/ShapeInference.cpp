//===- ShapeInference.cpp - Symbolic shape inference for ONNX nodes -------===//

#include "compiler/ONNXOps/ShapeInference.h"

#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

using namespace mlir;
using namespace mlir::folio;

AffineExpr ONNXShapeInference::getNamedDim(StringRef name) {
  auto related = relatedDims.find(name);
  if (related != relatedDims.end())
    return related->second;
  auto [it, inserted] = symbolIndex.try_emplace(name, symbolNames.size());
  if (inserted)
    symbolNames.push_back(name.str());
  return getAffineSymbolExpr(it->second, context);
}

std::string ONNXShapeInference::describe(AffineExpr expr) const {
  if (!expr)
    return "?";
  std::string printed;
  llvm::raw_string_ostream os(printed);
  expr.print(os);
  os.flush();
  // Replace each symbol token sN with its dim name.
  std::string out;
  for (size_t i = 0; i < printed.size();) {
    bool startsToken = i == 0 || !std::isalnum(printed[i - 1]);
    if (startsToken && printed[i] == 's' && i + 1 < printed.size() &&
        std::isdigit(printed[i + 1])) {
      size_t j = i + 1;
      while (j < printed.size() && std::isdigit(printed[j]))
        ++j;
      unsigned index = std::stoul(printed.substr(i + 1, j - i - 1));
      out += index < symbolNames.size() ? symbolNames[index]
                                        : printed.substr(i, j - i);
      i = j;
      continue;
    }
    out += printed[i++];
  }
  return out;
}

const ONNXValueFacts *ONNXShapeInference::lookup(Value value) const {
  auto it = facts.find(value);
  if (it != facts.end())
    return it->second.get();
  if (!lazy)
    return nullptr;
  return const_cast<ONNXShapeInference *>(this)->inferLazily(value, 0);
}

const ONNXValueFacts *ONNXShapeInference::inferLazily(Value value,
                                                      unsigned depth) {
  // New values sit on values run() saw; a long chain of new ones is not
  // worth a deep recursion.
  Operation *def = value.getDefiningOp();
  if (!def || depth > 32 || isa<ONNXNodeOp>(def))
    return nullptr;
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    if (auto attr = dyn_cast<ElementsAttr>(constant.getValue()))
      setFacts(value, factsForConstant(attr));
  } else {
    for (Value operand : def->getOperands())
      if (!facts.count(operand))
        inferLazily(operand, depth + 1);
    if (std::optional<ONNXValueFacts> inferred = inferNonONNXOp(def, *this)) {
      // Simplified as run() does, so equal dims compare equal.
      if (inferred->dims)
        for (AffineExpr &expr : *inferred->dims)
          if (expr)
            expr = simplifyAffineExpr(expr, 0, symbolNames.size());
      setFacts(def->getResult(0), std::move(*inferred));
    }
    for (Value result : def->getResults())
      if (!facts.count(result))
        setFacts(result, factsForType(result.getType()));
  }
  auto it = facts.find(value);
  return it == facts.end() ? nullptr : it->second.get();
}

void ONNXShapeInference::setFacts(Value value, ONNXValueFacts valueFacts) {
  facts[value] = std::make_unique<ONNXValueFacts>(std::move(valueFacts));
}

ONNXValueFacts ONNXShapeInference::factsForConstant(ElementsAttr value) const {
  ONNXValueFacts result;
  auto type = cast<ShapedType>(value.getType());
  result.elementType = type.getElementType();
  result.dims.emplace();
  for (int64_t dim : type.getShape())
    result.dims->push_back(getAffineConstantExpr(dim, context));

  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense || type.getNumElements() > kMaxTrackedElements)
    return result;
  if (isa<IntegerType>(result.elementType) && type.getRank() <= 1) {
    result.ints.emplace();
    bool isBool = result.elementType.isInteger(1);
    for (const APInt &element : dense.getValues<APInt>())
      result.ints->push_back(getAffineConstantExpr(
          isBool ? int64_t(element.getBoolValue()) : element.getSExtValue(),
          context));
  } else if (isa<FloatType>(result.elementType)) {
    result.floats.emplace();
    for (APFloat element : dense.getValues<APFloat>()) {
      bool losesInfo = false;
      element.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                      &losesInfo);
      result.floats->push_back(element.convertToDouble());
    }
  }
  return result;
}

ONNXValueFacts ONNXShapeInference::factsForType(Type type, ArrayAttr dimNames) {
  ONNXValueFacts result;
  auto shaped = dyn_cast<ShapedType>(type);
  result.elementType = shaped ? shaped.getElementType() : type;
  if (!shaped || !shaped.hasRank())
    return result;
  result.dims.emplace();
  for (auto [i, dim] : llvm::enumerate(shaped.getShape())) {
    StringRef name;
    if (dimNames && i < dimNames.size())
      if (auto str = dyn_cast<StringAttr>(dimNames[i]))
        name = str.getValue();
    if (!ShapedType::isDynamic(dim))
      result.dims->push_back(getAffineConstantExpr(dim, context));
    else if (!name.empty())
      result.dims->push_back(getNamedDim(name));
    else
      result.dims->push_back(AffineExpr());
  }
  return result;
}

LogicalResult
ONNXShapeInference::inferNode(StringRef domain, StringRef opType, int64_t opset,
                              DictionaryAttr attributes,
                              ArrayRef<const ONNXValueFacts *> inputs,
                              unsigned numOutputs, Location loc,
                              SmallVectorImpl<ONNXValueFacts> &results) {
  const ONNXOpSchema *schema = lookupONNXOp(domain, opType, opset);
  if (!schema) {
    InFlightDiagnostic diag = emitError(loc) << "unsupported ONNX op '"
                                             << opType << "' (domain " << domain
                                             << ", opset " << opset << ")";
    if (std::optional<int64_t> first = getFirstSupportedOpset(domain, opType))
      return diag << "; Folio supports it from opset " << *first;
    // Dynamically quantized and QOperator graphs compute on integers.
    if (domain == kONNXDomain &&
        (opType == "DynamicQuantizeLinear" || opType == "QLinearMatMul" ||
         opType == "MatMulInteger"))
      return diag << "; integer activation kernels (dynamic quantization, "
                     "QOperator format) are not supported: Folio takes "
                     "weights quantized by DequantizeLinear over constants "
                     "or com.microsoft MatMulNBits, and activations "
                     "quantized in QDQ format (QuantizeLinear -> "
                     "DequantizeLinear)";
    std::string supported = listSupportedONNXOps(domain);
    if (supported.empty())
      return diag << "; the domain is not supported (supported domains: "
                  << llvm::join(listSupportedONNXDomains(), ", ") << ")";
    return diag << "; supported ops in " << domain << ": " << supported;
  }
  if (inputs.size() < schema->minInputs || inputs.size() > schema->maxInputs)
    return emitError(loc) << opType << " takes " << schema->minInputs
                          << (schema->minInputs == schema->maxInputs
                                  ? ""
                                  : " to " + std::to_string(schema->maxInputs))
                          << " inputs, got " << inputs.size();
  // A variadic op (Concat, Max, Min) has no optional inputs: every one it
  // is given must be there.
  unsigned required =
      schema->maxInputs == ~0u ? unsigned(inputs.size()) : schema->minInputs;
  for (unsigned i = 0; i < required; ++i)
    if (!inputs[i])
      return emitError(loc)
             << opType << " input " << i << " is required but omitted";
  if (numOutputs < schema->minOutputs || numOutputs > schema->maxOutputs)
    return emitError(loc) << opType << " produces " << schema->minOutputs
                          << (schema->minOutputs == schema->maxOutputs
                                  ? ""
                                  : " to " + std::to_string(schema->maxOutputs))
                          << " outputs, got " << numOutputs;

  ONNXInferenceContext ctx(*this, opType, opset, attributes, inputs, numOutputs,
                           loc);
  if (failed(schema->infer(ctx)))
    return failure();
  // Canonical forms make equal dims compare equal (past + seq - past == seq).
  auto simplify = [&](std::optional<SmallVector<AffineExpr, 4>> &exprs) {
    if (!exprs)
      return;
    for (AffineExpr &expr : *exprs)
      if (expr)
        expr = simplifyAffineExpr(expr, 0, symbolNames.size());
  };
  results.clear();
  for (ONNXValueFacts &out : ctx.takeOutputs()) {
    assert(out.elementType && "handler left an output without a type");
    simplify(out.dims);
    simplify(out.ints);
    if (failed(checkResultShape(out, results.size(), opType, loc)))
      return failure();
    results.push_back(std::move(out));
  }
  return success();
}

std::string ONNXShapeInference::describeDims(ArrayRef<AffineExpr> dims) const {
  std::string out = "[";
  for (auto [i, dim] : llvm::enumerate(dims))
    out += (i ? ", " : "") + describe(dim);
  return out + "]";
}

LogicalResult ONNXShapeInference::checkResultShape(const ONNXValueFacts &out,
                                                   unsigned index,
                                                   StringRef opType,
                                                   Location loc) const {
  if (!out.dims)
    return success();
  if (int64_t(out.dims->size()) > kMaxRank)
    return emitError(loc) << opType << ": result " << index << " has rank "
                          << out.dims->size() << "; Folio supports ranks up to "
                          << kMaxRank;
  // The constant part of the shape must be a tensor that could exist:
  // no negative dim, no element count beyond kMaxElementCount.
  int64_t count = 1;
  bool overflow = false;
  for (auto [i, dim] : llvm::enumerate(*out.dims)) {
    std::optional<int64_t> value = getConstantDim(dim);
    if (!value)
      continue;
    if (*value < 0)
      return emitError(loc) << opType << ": result " << index << " would have "
                            << "negative dim " << *value << " at index " << i
                            << " (shape " << describeDims(*out.dims) << ")";
    std::optional<int64_t> product = checkedMul(count, *value);
    overflow |= !product;
    count = product.value_or(count);
  }
  // A zero dim makes the tensor empty, whatever the other dims.
  bool empty = llvm::any_of(*out.dims, [](AffineExpr dim) {
    return getConstantDim(dim) == int64_t(0);
  });
  if (empty || (!overflow && count <= kMaxElementCount))
    return success();
  InFlightDiagnostic diag = emitError(loc)
                            << opType << ": result " << index << " would have "
                            << "shape " << describeDims(*out.dims) << ", ";
  if (overflow)
    diag << "more than 2^63 elements";
  else
    diag << count << " elements";
  return diag << "; Folio supports at most " << kMaxElementCount
              << " (2^40) elements per tensor";
}

/// The name of dim `i` of input `arg`, or "" if it has none.
static StringRef inputDimName(func::FuncOp func, unsigned arg, unsigned i) {
  auto names = func.getArgAttrOfType<ArrayAttr>(arg, kDimNamesAttrName);
  if (!names || i >= names.size())
    return "";
  auto name = dyn_cast<StringAttr>(names[i]);
  return name ? name.getValue() : "";
}

void ONNXShapeInference::relateDecoderDims(func::FuncOp func) {
  StringRef seq, total, past;
  bool hasPast = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<StringAttr>(i, "folio.onnx_name");
    if (!name)
      continue;
    StringRef n = name.getValue();
    if (n == "input_ids") {
      seq = inputDimName(func, i, 1);
    } else if (n == "attention_mask") {
      total = inputDimName(func, i, 1);
    } else if (n.starts_with("past_key_values.") ||
               n.starts_with("past_key.") || n.starts_with("past_value.")) {
      StringRef p = inputDimName(func, i, 2);
      // Every past input must name the same length for it to be the past.
      if (hasPast && p != past)
        return;
      hasPast = true;
      past = p;
    }
  }
  if (seq.empty() || total.empty() || total == seq ||
      (hasPast && (past.empty() || past == seq || past == total)))
    return;
  AffineExpr length = getNamedDim(seq);
  if (hasPast)
    length = getNamedDim(past) + length;
  // In the canonical form results get, so that the two compare equal.
  relatedDims[total] = simplifyAffineExpr(length, 0, symbolNames.size());
}

LogicalResult ONNXShapeInference::run(func::FuncOp func) {
  relateDecoderDims(func);
  for (BlockArgument arg : func.getArguments())
    setFacts(arg, factsForType(arg.getType(),
                               func.getArgAttrOfType<ArrayAttr>(
                                   arg.getArgNumber(), kDimNamesAttrName)));
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (auto value = dyn_cast<ElementsAttr>(constant.getValue()))
        setFacts(constant.getResult(), factsForConstant(value));
      return WalkResult::advance();
    }
    auto node = dyn_cast<ONNXNodeOp>(op);
    if (!node) {
      if (std::optional<ONNXValueFacts> inferred = inferNonONNXOp(op, *this)) {
        // Simplify so that equal dims compare equal downstream.
        if (inferred->dims)
          for (AffineExpr &expr : *inferred->dims)
            if (expr)
              expr = simplifyAffineExpr(expr, 0, symbolNames.size());
        setFacts(op->getResult(0), std::move(*inferred));
        return WalkResult::advance();
      }
      for (Value result : op->getResults())
        setFacts(result, factsForType(result.getType()));
      return WalkResult::advance();
    }
    SmallVector<const ONNXValueFacts *> inputs(node.getNumONNXInputs(),
                                               nullptr);
    ArrayRef<int64_t> absent = node.getAbsentInputs();
    unsigned next = 0;
    for (auto [i, slot] : llvm::enumerate(inputs)) {
      if (llvm::is_contained(absent, int64_t(i)))
        continue;
      Value operand = node.getInputs()[next++];
      const ONNXValueFacts *known = lookup(operand);
      if (!known) {
        setFacts(operand, factsForType(operand.getType()));
        known = lookup(operand);
      }
      slot = known;
    }
    SmallVector<ONNXValueFacts> results;
    if (failed(inferNode(node.getDomain().empty() ? StringRef(kONNXDomain)
                                                  : node.getDomain(),
                         node.getOpType(), node.getOpset(),
                         node.getOnnxAttributes(), inputs, node.getNumResults(),
                         node.getLoc(), results)))
      return WalkResult::interrupt();
    for (auto [result, resultFacts] : llvm::zip(node.getResults(), results))
      setFacts(result, std::move(resultFacts));
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}
