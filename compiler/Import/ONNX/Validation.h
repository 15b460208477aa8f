//===- Validation.h - Model-level checks of a loaded model ------*- C++ -*-===//
//
// The checks that need the whole model rather than one message: versions,
// domains, and the dataflow rules (topological order, one producer per
// value). They run on the converted types, not on protobuf, so they are the
// same whatever the file looked like.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_VALIDATION_H
#define FOLIO_IMPORT_ONNX_VALIDATION_H

#include "compiler/Import/ONNX/Model.h"

#include "llvm/Support/Error.h"

#include <set>
#include <string>
#include <utility>

namespace folio::onnx {

/// (domain, name) of each model-local function, to explain why a node in an
/// unknown domain cannot be imported.
using LocalFunctionSet = std::set<std::pair<std::string, std::string>>;

/// IR version and opset imports: ai.onnx must be imported at a version in
/// [kMinDefaultOpset, kMaxDefaultOpset]; every import must be positive.
llvm::Error checkVersions(const ModelHeader &header);

/// Domains of nodes, names, topological order and unique producers.
llvm::Error checkGraph(const Graph &graph, const ModelHeader &header,
                       const LocalFunctionSet &localFunctions);

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_VALIDATION_H
