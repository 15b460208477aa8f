//===- ConstantBlobs.h - Reading and making weight constants ----*- C++ -*-===//
//
// Passes that rewrite constant weights (stacking q, k and v, cutting a
// table's rows) read their bytes and write the result into a resource blob,
// never into an attribute's storage of a weight-sized array.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_DIALECTS_FOLIO_TRANSFORMS_CONSTANTBLOBS_H
#define FOLIO_DIALECTS_FOLIO_TRANSFORMS_CONSTANTBLOBS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <vector>

namespace mlir::folio {

/// The row-major bytes of a constant tensor of static shape and byte-sized
/// elements (a splat expanded), or nullopt.
std::optional<std::vector<char>> constantBytes(Value v);

/// A constant holding `data` as `type`, in a resource blob named `name`.
Value createConstant(OpBuilder &b, Location loc, RankedTensorType type,
                     StringRef name, const std::vector<char> &data);

} // namespace mlir::folio

#endif // FOLIO_DIALECTS_FOLIO_TRANSFORMS_CONSTANTBLOBS_H
