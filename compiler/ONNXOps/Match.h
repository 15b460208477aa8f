//===- Match.h - Matching imported ONNX subgraphs ---------------*- C++ -*-===//
//
// Small helpers the raise passes share to walk folio.onnx_node graphs.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_ONNXOPS_MATCH_H
#define FOLIO_ONNXOPS_MATCH_H

#include "dialects/Folio/IR/FolioOps.h"

#include <optional>
#include <vector>

namespace mlir::folio {

/// The onnx_node defining `value` if it is `opType` in `domain` ("" = the
/// default domain), else null.
ONNXNodeOp matchONNX(Value value, StringRef opType, StringRef domain = "");

/// `value` with any chain of tensor.cast views above it looked through.
Value stripTensorCasts(Value value);

/// Input `index` of `node` in ONNX numbering (absent inputs count), or null
/// when that input is omitted or past the end.
Value getONNXInput(ONNXNodeOp node, unsigned index);

/// The value of a constant with one element (or a splat), as a double.
std::optional<double> getScalarConstant(Value value);

/// The elements of a small integer constant.
std::optional<SmallVector<int64_t>> getIntConstants(Value value);

/// The elements of an f32, f16 or bf16 constant attribute of static shape,
/// as f32 (exactly: f32 holds every f16 and bf16 value); nullopt for other
/// element types or an attribute without data.
std::optional<std::vector<float>> readFloatElements(ElementsAttr value);

/// An int attribute of the node, or `defaultValue`.
int64_t getONNXIntAttr(ONNXNodeOp node, StringRef name, int64_t defaultValue);
/// A float attribute of the node, or `defaultValue`.
double getONNXFloatAttr(ONNXNodeOp node, StringRef name, double defaultValue);

} // namespace mlir::folio

#endif // FOLIO_ONNXOPS_MATCH_H
