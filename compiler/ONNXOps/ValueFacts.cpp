//===- ValueFacts.cpp - What shape inference knows about a value ----------===//

#include "compiler/ONNXOps/ValueFacts.h"

using namespace mlir;
using namespace mlir::folio;

std::optional<int64_t> mlir::folio::getConstantDim(AffineExpr expr) {
  if (auto constant = dyn_cast_or_null<AffineConstantExpr>(expr))
    return constant.getValue();
  return std::nullopt;
}

TensorType ONNXValueFacts::getType() const {
  if (!dims)
    return UnrankedTensorType::get(elementType);
  SmallVector<int64_t> shape;
  for (AffineExpr dim : *dims) {
    std::optional<int64_t> value = getConstantDim(dim);
    shape.push_back(value && *value >= 0 ? *value : ShapedType::kDynamic);
  }
  return RankedTensorType::get(shape, elementType);
}

std::optional<int64_t> ONNXValueFacts::getStaticNumElements() const {
  if (!dims)
    return std::nullopt;
  int64_t count = 1;
  for (AffineExpr dim : *dims) {
    std::optional<int64_t> value = getConstantDim(dim);
    if (!value)
      return std::nullopt;
    count *= *value;
  }
  return count;
}

bool ONNXValueFacts::hasConstantInts() const {
  return getConstantInts().has_value();
}

std::optional<SmallVector<int64_t, 4>> ONNXValueFacts::getConstantInts() const {
  if (!ints)
    return std::nullopt;
  SmallVector<int64_t, 4> values;
  for (AffineExpr element : *ints) {
    std::optional<int64_t> value = getConstantDim(element);
    if (!value)
      return std::nullopt;
    values.push_back(*value);
  }
  return values;
}
