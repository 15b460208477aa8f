//===- RotaryAngles.h - What a model's cos/sin tables encode -----*- C++
//-*-===//
//
// Exporters ship rotary angles in many forms (inv_freq x positions computed
// in the graph, cos/sin caches gathered by position, fused ops' caches).
// All of them are read back as concrete cos/sin values per (position, pair)
// and then classified here: angles linear in the position with geometric
// frequencies become `base` (+ linear scaling), anything else that is still
// a rotation becomes a `cos_sin_cache` table.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_ROTARYANGLES_H
#define FOLIO_RAISEATTENTION_ROTARYANGLES_H

#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::folio {

struct RotaryAngles {
  /// Angles are position * base^(-2i/rotary_dim) / scalingFactor.
  bool geometric = false;
  double base = 10000.0;
  double scalingFactor = 1.0;
  /// The angles of positions 0..rows-1: per row, cos of every pair, then sin
  /// of every pair (the folio.rotary cos_sin_cache layout).
  std::vector<double> table;
  int64_t rows = 0;
};

/// Reads cos/sin of pair `pair` at the `index`-th evaluated position.
using AngleReader = llvm::function_ref<double(int64_t index, int64_t pair)>;

/// Classifies the angles at `positions` (which start 0, 1, ...). When
/// `positions` is exactly 0..n-1 the result also carries the table. Fails
/// with `error` set when the values are not a rotation by angles that are 0
/// at position 0.
FailureOr<RotaryAngles> analyzeRotaryAngles(ArrayRef<int64_t> positions,
                                            int64_t pairs, AngleReader cosAt,
                                            AngleReader sinAt,
                                            std::string &error);

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_ROTARYANGLES_H
