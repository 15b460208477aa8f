//===- ErrorUtil.h - Building the loader's errors ---------------*- C++ -*-===//
//
// Every loader error is a plain message (no error codes): the message is the
// product, and it names what was wrong, where, and what is supported.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IMPORT_ONNX_ERRORUTIL_H
#define FOLIO_IMPORT_ONNX_ERRORUTIL_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace folio::onnx {

inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Prepends "<context>: " to the message of `error` (which must be a failure).
inline llvm::Error addContext(const llvm::Twine &context, llvm::Error error) {
  return makeError(context + ": " + llvm::toString(std::move(error)));
}

} // namespace folio::onnx

#endif // FOLIO_IMPORT_ONNX_ERRORUTIL_H
