//===- RotaryMatch.h - The decomposed rotary pattern -------------*- C++
//-*-===//
//
// `x * cos + rotate(x) * sin`, where rotate is rotate_half (half-split) or
// rotate_every_two (interleaved), and x may be the first rotary_dim channels
// of the heads with the rest concatenated back (partial rotary). Only the
// structure is matched here; what cos and sin hold is read by evaluation.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_ROTARYMATCH_H
#define FOLIO_RAISEATTENTION_ROTARYMATCH_H

#include "compiler/ONNXOps/ShapeInference.h"
#include "dialects/Folio/IR/FolioOps.h"

#include <optional>

namespace mlir::folio {

struct RotaryMatch {
  /// The node whose result the rotary replaces (the Add, or the Concat that
  /// puts the pass-through channels back).
  Operation *root = nullptr;
  /// The head tensor the rotary applies to (all channels).
  Value input;
  int64_t rotaryDim = 0;
  RopeStyle style = RopeStyle::half_split;
  /// The factors of x and of rotate(x).
  Value cos, sin;
};

/// Matches the rotary whose final Add is `add`.
std::optional<RotaryMatch> matchDecomposedRotary(ONNXNodeOp add,
                                                 ONNXShapeInference &inf);

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_ROTARYMATCH_H
