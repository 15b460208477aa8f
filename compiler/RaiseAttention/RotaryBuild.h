//===- RotaryBuild.h - Reading angles and building folio.rotary --*- C++
//-*-===//
//
// Shared by the rotary pass (decomposed and fused RotaryEmbedding) and the
// attention pass (GroupQueryAttention with do_rotary).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_ROTARYBUILD_H
#define FOLIO_RAISEATTENTION_ROTARYBUILD_H

#include "compiler/RaiseAttention/RaiseUtils.h"
#include "compiler/RaiseAttention/RotaryAngles.h"

namespace mlir::folio {

/// What the angles of one rotary are, and where they come from.
struct RotarySource {
  Value positions;
  RotaryAngles angles;
  /// The axis of a rank-4 head tensor that cos/sin run along the sequence
  /// on (broadcasting aligns them right): 2 for [B, H, S, D], 1 for
  /// [B, S, H, D].
  int64_t seqAxis = -1;
  /// The angles were gathered from a constant table by position.
  bool gathered = false;
  /// The cos_sin_cache constant once built (q and k share it).
  Value table;
};

/// Reads the angles of a decomposed rotary: `cos`/`sin` are the factors of x
/// and rotate(x) on a rank-4 head tensor, computed from a [B, S] integer
/// value this finds. `computedRows` rows go into the table of computed
/// angles that are not geometric. Fails with `error` set.
FailureOr<RotarySource>
readComputedAngles(func::FuncOp func, ONNXShapeInference &inference, Value cos,
                   Value sin, int64_t rotaryDim, RopeStyle style,
                   bool duplicatedPairs, int64_t computedRows,
                   std::string &error);

/// Reads constant [max_position, rotary_dim / 2] cos/sin caches.
FailureOr<RotaryAngles> readCacheTables(ONNXShapeInference &inference,
                                        Value cosCache, Value sinCache,
                                        std::string &error);

/// Builds folio.rotary on `input` ([B, H, S, D]); a non-geometric angle set
/// (or any, with `forceTable`) becomes the cos_sin_cache operand, built at
/// the top of the function into `table` unless it is set already. The
/// result carries `input`'s facts.
Value buildRotary(ONNXNodeBuilder &nb, Location loc, Value input,
                  Value positions, const RotaryAngles &angles,
                  int64_t rotaryDim, RopeStyle style, bool forceTable,
                  Value &table);

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_ROTARYBUILD_H
