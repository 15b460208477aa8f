//===- TensorConstants.cpp - ONNX tensors as MLIR constants ---------------===//

#include "compiler/Import/MLIR/TensorConstants.h"

#include "compiler/Import/ONNX/Model.h"
#include "compiler/Import/ONNX/TensorData.h"
#include "compiler/ONNXOps/InferHelpers.h"
#include "dialects/Folio/IR/ConstantData.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/StringExtras.h"

#include <cstdint>

using namespace mlir;
using namespace mlir::folio;
namespace onnx = ::folio::onnx;

/// The largest power of two (up to 64) the address is aligned to: resource
/// blobs must state an alignment their data really has.
static size_t alignmentOf(const void *data) {
  uintptr_t address = reinterpret_cast<uintptr_t>(data);
  size_t align = 64;
  while (align > 1 && address % align != 0)
    align /= 2;
  return align;
}

FailureOr<ElementsAttr>
mlir::folio::convertTensor(MLIRContext &context, const onnx::TensorData &tensor,
                           std::shared_ptr<const onnx::Model> owner,
                           int64_t inlineElementLimit, Location loc) {
  Type element = infer::elementTypeFromONNX(
      &context, static_cast<int64_t>(tensor.getElementType()));
  if (!element)
    return emitError(loc) << "tensor '" << tensor.getName()
                          << "' has element type "
                          << onnx::getElementTypeName(tensor.getElementType())
                          << ", which Folio does not support";
  auto type = RankedTensorType::get(tensor.getDims(), element);
  ArrayRef<uint8_t> bytes = tensor.getBytes();

  // ONNX stores a byte per bool; MLIR packs bits. Bool tensors are masks,
  // small enough to convert.
  if (element.isInteger(1)) {
    SmallVector<bool> bits;
    for (uint8_t byte : bytes)
      bits.push_back(byte != 0);
    return ElementsAttr(DenseElementsAttr::get(type, bits));
  }

  ArrayRef<char> raw(reinterpret_cast<const char *>(bytes.data()),
                     bytes.size());
  if (tensor.getNumElements() <= inlineElementLimit) {
    bool isSplat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, raw, isSplat))
      return emitError(loc)
             << "tensor '" << tensor.getName() << "' has " << bytes.size()
             << " bytes, which does not match " << type;
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, raw));
  }

  // The deleter owns a reference to the model: the bytes stay mapped for as
  // long as any attribute can reach them.
  AsmResourceBlob blob = UnmanagedAsmResourceBlob::allocateWithAlign(
      raw, alignmentOf(raw.data()),
      [owner = std::move(owner)](void *, size_t, size_t) {});
  return ElementsAttr(DenseResourceElementsAttr::get(
      type, resourceKey(tensor.getName()), std::move(blob)));
}
