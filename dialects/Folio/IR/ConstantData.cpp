//===- ConstantData.cpp - What weight constants hold ----------------------===//

#include "dialects/Folio/IR/ConstantData.h"

#include "dialects/Folio/IR/FolioOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

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

bool mlir::folio::isWeightDequantize(Operation *op) {
  return op && isa<DequantizeOp>(op) &&
         llvm::all_of(op->getOperands(), [](Value v) {
           return bool(v.getDefiningOp<arith::ConstantOp>());
         });
}
