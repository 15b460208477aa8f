//===- ConstantData.cpp - What weight constants hold ----------------------===//

#include "dialects/Folio/IR/ConstantData.h"

#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;

ArrayRef<char> mlir::folio::getConstantBytes(ElementsAttr value,
                                             size_t numElements,
                                             size_t elementSize,
                                             std::vector<char> &splat) {
  size_t bytes = numElements * elementSize;
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != bytes)
      return {};
    return blob->getData();
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return {};
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat())
    return raw.size() == bytes ? raw : ArrayRef<char>();
  if (raw.size() < elementSize)
    return {};
  splat.resize(bytes);
  for (size_t i = 0; i < bytes; i += elementSize)
    std::memcpy(splat.data() + i, raw.data(), elementSize);
  return splat;
}

std::string mlir::folio::resourceKey(StringRef name) {
  std::string key = name.empty() ? "tensor" : name.str();
  for (char &c : key)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  if (llvm::isDigit(key.front()))
    key.insert(key.begin(), '_');
  return key;
}

bool mlir::folio::isWeightDequantize(Operation *op) {
  return op && isa<DequantizeOp>(op) &&
         llvm::all_of(op->getOperands(), [](Value v) {
           return bool(v.getDefiningOp<arith::ConstantOp>());
         });
}

FailureOr<mlir::folio::QuantizedWeight>
mlir::folio::readQuantizedWeight(Operation *op, std::string &why) {
  auto dq = dyn_cast_or_null<DequantizeOp>(op);
  if (!dq || !isWeightDequantize(op)) {
    why = "not a folio.dequantize over constants";
    return failure();
  }
  auto type = cast<RankedTensorType>(dq.getResult().getType());
  auto codesType = cast<RankedTensorType>(dq.getInput().getType());
  auto scaleType = cast<RankedTensorType>(dq.getScale().getType());
  Type codeElement = codesType.getElementType();
  if (type.getRank() != 2 || !type.hasStaticShape() ||
      !type.getElementType().isF32() || !scaleType.getElementType().isF32() ||
      !(codeElement.isSignlessInteger(8) || codeElement.isSignlessInteger(4))) {
    why = "a quantized weight is a static rank-2 f32 tensor of i8 or i4 codes "
          "with f32 scales";
    return failure();
  }
  QuantizedWeight q;
  q.int8Activations = dq.getInt8Activations();
  q.rows = type.getDimSize(0);
  q.cols = type.getDimSize(1);
  q.bits = int(codeElement.getIntOrFloatBitWidth());
  q.scaleRows = scaleType.getRank() == 2 ? scaleType.getDimSize(0) : 1;
  q.scaleCols = scaleType.getRank() == 2 ? scaleType.getDimSize(1) : 1;
  // Scale dims are 1 (shared), the data's (one each) or blocked
  // (folio.dequantize's verifier has checked which).
  auto blockOf = [&](int64_t scaleDim, int64_t dim) {
    return scaleDim == 1 ? dim : scaleDim == dim ? 1 : dq.getBlockSize();
  };
  q.rowBlock = blockOf(q.scaleRows, q.rows);
  q.colBlock = blockOf(q.scaleCols, q.cols);
  std::vector<char> splat;
  auto read = [&](Value v, size_t count, size_t size) {
    auto attr =
        cast<ElementsAttr>(v.getDefiningOp<arith::ConstantOp>().getValue());
    return getConstantBytes(attr, count, size, splat);
  };
  size_t count = size_t(q.rows * q.cols),
         scaleCount = size_t(q.scaleRows * q.scaleCols);
  // Sub-byte codes are stored a byte each; only their low bits count.
  int shift = 8 - q.bits;
  auto widen = [&](char byte) {
    return int8_t(int8_t(uint8_t(byte) << shift) >> shift);
  };
  ArrayRef<char> codes = read(dq.getInput(), count, 1);
  if (codes.size() != count) {
    why = "the quantized weight's codes cannot be read";
    return failure();
  }
  q.codes.resize(count);
  for (size_t i = 0; i < count; ++i)
    q.codes[i] = widen(codes[i]);
  ArrayRef<char> scales = read(dq.getScale(), scaleCount, 4);
  if (scales.size() != scaleCount * 4) {
    why = "the quantized weight's scales cannot be read";
    return failure();
  }
  q.scales.resize(scaleCount);
  std::memcpy(q.scales.data(), scales.data(), scaleCount * 4);
  if (Value zp = dq.getZeroPoint()) {
    ArrayRef<char> zeros =
        cast<RankedTensorType>(zp.getType()).getElementType() == codeElement
            ? read(zp, scaleCount, 1)
            : ArrayRef<char>();
    if (zeros.size() != scaleCount) {
      why = "the quantized weight's zero points cannot be read (they must "
            "have the codes' type)";
      return failure();
    }
    q.zeros.resize(scaleCount);
    for (size_t i = 0; i < scaleCount; ++i)
      q.zeros[i] = widen(zeros[i]);
  }
  return q;
}
