//===- TensorConstants.h - ONNX tensors as MLIR constants -------*- C++ -*-===//

#ifndef FOLIO_IMPORT_MLIR_TENSORCONSTANTS_H
#define FOLIO_IMPORT_MLIR_TENSORCONSTANTS_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>

namespace folio::onnx {
class Model;
class TensorData;
} // namespace folio::onnx

namespace mlir::folio {

/// A tensor of at most `inlineElementLimit` elements (or a bool tensor)
/// becomes a DenseElementsAttr; a larger one a DenseResourceElementsAttr
/// whose blob points at the tensor's bytes and keeps `owner` alive, so
/// weights are never copied.
FailureOr<ElementsAttr>
convertTensor(MLIRContext &context, const ::folio::onnx::TensorData &tensor,
              std::shared_ptr<const ::folio::onnx::Model> owner,
              int64_t inlineElementLimit, Location loc);

} // namespace mlir::folio

#endif // FOLIO_IMPORT_MLIR_TENSORCONSTANTS_H
