//===- ValueFacts.cpp - What shape inference knows about a value ----------===//

#include "compiler/ONNXOps/ValueFacts.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::folio;

std::optional<int64_t> mlir::folio::getConstantDim(AffineExpr expr) {
  if (auto constant = dyn_cast_or_null<AffineConstantExpr>(expr))
    return constant.getValue();
  return std::nullopt;
}

std::optional<int64_t> mlir::folio::checkedMul(int64_t a, int64_t b) {
  int64_t result;
  if (llvm::MulOverflow(a, b, result))
    return std::nullopt;
  return result;
}

std::optional<int64_t> mlir::folio::checkedAdd(int64_t a, int64_t b) {
  int64_t result;
  if (llvm::AddOverflow(a, b, result))
    return std::nullopt;
  return result;
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
    if (!value || *value < 0)
      return std::nullopt;
    std::optional<int64_t> product = checkedMul(count, *value);
    if (!product)
      return std::nullopt;
    count = *product;
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
