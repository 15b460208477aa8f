//===- ImportONNX.h - A loaded ONNX model to an MLIR module -----*- C++ -*-===//
//
// Builds `func.func @main` from a loaded model: one argument per graph
// input, one `folio.onnx_node` per node (typed by symbolic shape inference),
// initializers as constants that view the model's memory without copying.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_MLIR_IMPORTONNX_H
#define FOLIO_IMPORT_MLIR_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstddef>
#include <memory>

namespace folio::onnx {
class Model;
} // namespace folio::onnx

namespace mlir::folio {

/// Module attributes the importer records.
inline constexpr llvm::StringLiteral kONNXProducerAttrName =
    "folio.onnx.producer";
inline constexpr llvm::StringLiteral kONNXOpsetsAttrName = "folio.onnx.opsets";
/// Argument/result attribute: the ONNX value name.
inline constexpr llvm::StringLiteral kONNXNameAttrName = "folio.onnx_name";

struct ONNXImportOptions {
  /// Constants up to this many elements become dense attributes (folding
  /// and pattern matching read them); larger ones become resources that
  /// point into the model's memory.
  int64_t inlineElementLimit = 64;
  /// Called after each node with (nodes done, total), for progress display.
  std::function<void(size_t, size_t)> progress;
};

/// Imports `model`. The module's resources reference the model's memory
/// (mapped external data, raw_data), so the returned module keeps `model`
/// alive. Errors are reported through the context's diagnostic handler, at
/// the offending node, and yield nullptr.
OwningOpRef<ModuleOp>
importONNXModel(MLIRContext &context,
                std::shared_ptr<const ::folio::onnx::Model> model,
                const ONNXImportOptions &options = {});

} // namespace mlir::folio

#endif // FOLIO_IMPORT_MLIR_IMPORTONNX_H
