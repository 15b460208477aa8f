//===- TokenwiseCheck.h - Prove a serving entry token-wise ------*- C++ -*-===//

#ifndef FOLIO_TRANSFORMS_TOKENWISECHECK_H
#define FOLIO_TRANSFORMS_TOKENWISECHECK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::folio {

/// Succeeds if no op of `func` other than paged attention (and the KV
/// write) mixes values across the `num_tokens` axis: each token's row must
/// depend only on that token, or serving one batch would change another
/// sequence's output. Fails with an error at the first op that does, or that
/// it has no rule for.
LogicalResult checkTokenwise(func::FuncOp func);

} // namespace mlir::folio

#endif // FOLIO_TRANSFORMS_TOKENWISECHECK_H
