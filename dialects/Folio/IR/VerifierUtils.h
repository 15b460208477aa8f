//===- VerifierUtils.h - Small helpers the op verifiers share ---*- C++ -*-===//
//
// Internal to dialects/Folio/IR: FolioOps.cpp and FolioTensorOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_IR_VERIFIERUTILS_H
#define FOLIO_IR_VERIFIERUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <string>

namespace mlir::folio::detail {

/// A dimension the way the IR spells it.
inline std::string dimString(int64_t value) {
  return ShapedType::isDynamic(value) ? "?" : std::to_string(value);
}

/// Whether two dims can be equal (a dynamic one matches anything).
inline bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

inline RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

} // namespace mlir::folio::detail

#endif // FOLIO_IR_VERIFIERUTILS_H
