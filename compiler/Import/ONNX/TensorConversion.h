//===- TensorConversion.h - TensorProto to TensorData -----------*- C++ -*-===//
//
// Internal to the loader (it exposes the generated protobuf classes).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_TENSORCONVERSION_H
#define FOLIO_IMPORT_ONNX_TENSORCONVERSION_H

#include "compiler/Import/ONNX/TensorData.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace folio_onnx {
class TensorProto;
} // namespace folio_onnx

namespace folio::onnx {

class ExternalDataResolver;

/// Converts `proto` into a TensorData, checking its type, dims and byte
/// count. Inline `raw_data` is moved out of `proto`, not copied; external
/// data is viewed through `resolver`. Errors start with `what` (e.g.
/// "initializer 'w'").
llvm::Expected<TensorData> convertTensor(folio_onnx::TensorProto &proto,
                                         ExternalDataResolver &resolver,
                                         const llvm::Twine &what);

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_TENSORCONVERSION_H
