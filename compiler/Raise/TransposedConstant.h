//===- TransposedConstant.h - A rank-2 constant, transposed -----*- C++ -*-===//
//
// Tied embeddings written as Gather(Transpose(lm_head), ids) (ONNX Runtime
// GenAI's model builder) index the columns of the output projection; the
// embedding kernel reads rows, so the table is transposed at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISE_TRANSPOSEDCONSTANT_H
#define FOLIO_RAISE_TRANSPOSEDCONSTANT_H

#include "mlir/IR/Builders.h"

namespace mlir::folio {

/// A new constant holding the transpose of the rank-2 constant `value`
/// (dense or resource-backed, any element type of whole bytes) in a resource
/// blob named `name`; null if `value` is not such a constant.
Value createTransposedConstant(OpBuilder &b, Location loc, Value value,
                               StringRef name);

} // namespace mlir::folio

#endif // FOLIO_RAISE_TRANSPOSEDCONSTANT_H
