//===- ConstantBlobs.cpp - Reading and making weight constants ------------===//

#include "dialects/Folio/Transforms/ConstantBlobs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

namespace mlir::folio {

std::optional<std::vector<char>> constantBytes(Value v) {
  auto constant = v.getDefiningOp<arith::ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  size_t es = type.getElementTypeBitWidth() / 8;
  if (es == 0 || type.getElementTypeBitWidth() % 8)
    return std::nullopt;
  size_t bytes = size_t(type.getNumElements()) * es;
  if (auto res = dyn_cast<DenseResourceElementsAttr>(constant.getValue())) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != bytes)
      return std::nullopt;
    return std::vector<char>(blob->getData().begin(), blob->getData().end());
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue())) {
    ArrayRef<char> raw = dense.getRawData();
    std::vector<char> out(bytes);
    if (dense.isSplat()) {
      if (raw.size() < es)
        return std::nullopt;
      for (size_t i = 0; i < bytes; i += es)
        std::memcpy(out.data() + i, raw.data(), es);
    } else {
      if (raw.size() != bytes)
        return std::nullopt;
      std::memcpy(out.data(), raw.data(), bytes);
    }
    return out;
  }
  return std::nullopt;
}

Value createConstant(OpBuilder &b, Location loc, RankedTensorType type,
                     StringRef name, const std::vector<char> &data) {
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(data.size(), 64);
  std::memcpy(blob.getMutableData().data(), data.data(), data.size());
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  return b.create<arith::ConstantOp>(loc, attr);
}

} // namespace mlir::folio
