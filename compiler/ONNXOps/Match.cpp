//===- Match.cpp - Matching imported ONNX subgraphs -----------------------===//

#include "compiler/ONNXOps/Match.h"

#include "codegen/CPU/DType.h"
#include "dialects/Folio/IR/ConstantData.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstring>

using namespace mlir;
using namespace mlir::folio;

ONNXNodeOp mlir::folio::matchONNX(Value value, StringRef opType,
                                  StringRef domain) {
  auto node = value.getDefiningOp<ONNXNodeOp>();
  if (!node || node.getOpType() != opType || node.getDomain() != domain)
    return {};
  return node;
}

Value mlir::folio::stripTensorCasts(Value value) {
  while (auto cast = value.getDefiningOp<tensor::CastOp>())
    value = cast.getSource();
  return value;
}

Value mlir::folio::getONNXInput(ONNXNodeOp node, unsigned index) {
  ArrayRef<int64_t> absent = node.getAbsentInputs();
  if (llvm::is_contained(absent, int64_t(index)))
    return {};
  unsigned before = llvm::count_if(
      absent, [&](int64_t position) { return position < int64_t(index); });
  unsigned operand = index - before;
  if (operand >= node.getInputs().size())
    return {};
  return node.getInputs()[operand];
}

static DenseElementsAttr getDenseConstant(Value value) {
  if (auto constant = value.getDefiningOp<arith::ConstantOp>())
    return dyn_cast<DenseElementsAttr>(constant.getValue());
  return {};
}

std::optional<double> mlir::folio::getScalarConstant(Value value) {
  DenseElementsAttr dense = getDenseConstant(value);
  if (!dense || (!dense.isSplat() && dense.getNumElements() != 1))
    return std::nullopt;
  Type element = dense.getElementType();
  if (isa<FloatType>(element))
    return (*dense.getValues<APFloat>().begin()).convertToDouble();
  if (isa<IntegerType>(element))
    return double((*dense.getValues<APInt>().begin()).getSExtValue());
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> mlir::folio::getIntConstants(Value value) {
  DenseElementsAttr dense = getDenseConstant(value);
  if (!dense || !isa<IntegerType>(dense.getElementType()))
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &v : dense.getValues<APInt>())
    values.push_back(v.getSExtValue());
  return values;
}

std::optional<std::vector<float>>
mlir::folio::readFloatElements(ElementsAttr value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  Type et = type.getElementType();
  size_t n = size_t(type.getNumElements());
  size_t size = et.isF32() ? 4 : (et.isF16() || et.isBF16()) ? 2 : 0;
  if (!size)
    return std::nullopt;
  std::vector<char> splat;
  ArrayRef<char> raw = getConstantBytes(value, n, size, splat);
  if (raw.size() != n * size)
    return std::nullopt;
  std::vector<float> out(n);
  if (size == 4) {
    std::memcpy(out.data(), raw.data(), n * 4);
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + i * 2, 2);
    out[i] = et.isBF16() ? ::folio::cpu::bf16ToFloat(bits)
                         : ::folio::cpu::f16ToFloat(bits);
  }
  return out;
}

int64_t mlir::folio::getONNXIntAttr(ONNXNodeOp node, StringRef name,
                                    int64_t defaultValue) {
  if (auto attr = node.getOnnxAttributes().getAs<IntegerAttr>(name))
    return attr.getInt();
  return defaultValue;
}

double mlir::folio::getONNXFloatAttr(ONNXNodeOp node, StringRef name,
                                     double defaultValue) {
  if (auto attr = node.getOnnxAttributes().getAs<FloatAttr>(name))
    return attr.getValueAsDouble();
  return defaultValue;
}
