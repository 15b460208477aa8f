//===- Lowering.cpp - The lowering table and the hooks' context -----------===//

#include "compiler/ONNXOps/Lowering.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::folio;

static const std::vector<ONNXLowering> &getLoweringTable() {
  static const std::vector<ONNXLowering> table = [] {
    std::vector<ONNXLowering> entries;
    appendElementwiseLowerings(entries);
    appendDataMovementLowerings(entries);
    return entries;
  }();
  return table;
}

const ONNXLowering *mlir::folio::lookupONNXLowering(StringRef domain,
                                                    StringRef opType,
                                                    int64_t opset) {
  return resolveBySinceVersion(getLoweringTable(), domain, opType, opset);
}

std::string mlir::folio::listLoweredONNXOps(StringRef domain) {
  return listOpTypes(getLoweringTable(), domain);
}

Value ONNXLoweringContext::input(unsigned i) const {
  ArrayRef<int64_t> absent = node.getAbsentInputs();
  if (i >= node.getNumONNXInputs() || llvm::is_contained(absent, int64_t(i)))
    return {};
  unsigned before = llvm::count_if(absent, [&](int64_t a) { return a < i; });
  return node.getInputs()[i - before];
}

std::optional<SmallVector<int64_t, 4>>
ONNXLoweringContext::constantInts(unsigned i) const {
  Value v = input(i);
  if (!v)
    return std::nullopt;
  const ONNXValueFacts *f = facts(v);
  if (!f || !f->ints)
    return std::nullopt;
  return f->getConstantInts();
}

RankedTensorType mlir::folio::refineType(RankedTensorType type,
                                         const ONNXValueFacts *facts) {
  if (!facts || !facts->dims || int64_t(facts->dims->size()) != type.getRank())
    return type;
  SmallVector<int64_t> shape(type.getShape());
  for (auto [i, expr] : llvm::enumerate(*facts->dims))
    if (ShapedType::isDynamic(shape[i]) && expr)
      if (std::optional<int64_t> c = getConstantDim(expr))
        shape[i] = *c;
  return RankedTensorType::get(shape, type.getElementType());
}

RankedTensorType ONNXLoweringContext::refinedType(Value v) const {
  return refineType(cast<RankedTensorType>(v.getType()), facts(v));
}

RankedTensorType ONNXLoweringContext::resultType(unsigned i) const {
  return refinedType(node.getResult(i));
}

int64_t ONNXLoweringContext::getInt(StringRef name, int64_t dflt) const {
  if (auto attr = node.getOnnxAttributes().getAs<IntegerAttr>(name))
    return attr.getInt();
  return dflt;
}

SmallVector<int64_t> ONNXLoweringContext::getInts(StringRef name) const {
  Attribute attr = node.getOnnxAttributes().get(name);
  if (auto dense = dyn_cast_or_null<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(dense.asArrayRef());
  SmallVector<int64_t> out;
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    for (Attribute a : array)
      if (auto i = dyn_cast<IntegerAttr>(a))
        out.push_back(i.getInt());
  return out;
}

void ONNXLoweringContext::replaceNode(ValueRange values) const {
  for (auto [old, now] : llvm::zip(node.getResults(), values))
    if (const ONNXValueFacts *f = inference.lookup(old))
      if (!inference.lookup(now))
        inference.setFacts(now, *f);
  rewriter.replaceOp(node, values);
}

LogicalResult ONNXLoweringContext::fail(const Twine &reason) const {
  reasons[node.getOperation()] = reason.str();
  return failure();
}

Value mlir::folio::createReshape(PatternRewriter &rewriter, Location loc,
                                 Value value, RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return rewriter.create<ReshapeOp>(loc, type, value);
}
