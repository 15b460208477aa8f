//===- TransposedConstant.cpp - A rank-2 constant, transposed -------------===//

#include "compiler/Raise/TransposedConstant.h"

#include "dialects/Folio/IR/ConstantData.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;
using namespace mlir::folio;

Value mlir::folio::createTransposedConstant(OpBuilder &b, Location loc,
                                            Value value, StringRef name) {
  auto constant = value.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!constant || !type || type.getRank() != 2 || !type.hasStaticShape() ||
      !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8 != 0)
    return {};
  size_t es = type.getElementTypeBitWidth() / 8;
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  size_t bytes = size_t(rows) * size_t(cols) * es;
  std::vector<char> splat;
  ArrayRef<char> src = getConstantBytes(cast<ElementsAttr>(constant.getValue()),
                                        size_t(rows) * size_t(cols), es, splat);
  if (src.size() != bytes)
    return {};
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes, 64);
  char *dst = blob.getMutableData().data();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + (size_t(c) * rows + r) * es,
                  src.data() + (size_t(r) * cols + c) * es, es);
  auto resultType = RankedTensorType::get({cols, rows}, type.getElementType());
  return b.create<arith::ConstantOp>(
      loc, DenseResourceElementsAttr::get(resultType, name, std::move(blob)));
}
