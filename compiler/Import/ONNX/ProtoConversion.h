//===- ProtoConversion.h - ModelProto to Model ------------------*- C++ -*-===//
//
// Internal to the loader (it exposes the generated protobuf classes).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_PROTOCONVERSION_H
#define FOLIO_IMPORT_ONNX_PROTOCONVERSION_H

#include "compiler/Import/ONNX/Model.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace folio_onnx {
class ModelProto;
} // namespace folio_onnx

namespace folio::onnx {

/// Converts and validates a parsed model. Consumes `proto`'s inline tensor
/// bytes (moved, not copied). External data is resolved against
/// `externalDataDir` (empty: refused). `path` names the model in the Model.
llvm::Expected<std::unique_ptr<Model>>
convertModel(folio_onnx::ModelProto &proto, llvm::StringRef path,
             llvm::StringRef externalDataDir);

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_PROTOCONVERSION_H
