//===- PositionAnalysis.h - Positions a graph computes, by meaning -*- C++
//-*-===//
//
// Graphs exported without a `position_ids` input compute positions inside:
// `past_len + Range(seq)` from the past's shape (transformers'
// cache_position), `Range(0, seq)` without a cache, or `cumsum(mask) - 1`
// sliced to the new tokens. Served, every sequence is its own unpadded batch
// of one, so such a value stands for the serving contract's `positions` iff,
// for one unpadded sequence with `p` past and `s` new tokens, it holds
// p, p + 1, ..., p + s - 1. That is checked as masks are: by evaluating the
// value on concrete configurations, short ones always and long ones up to
// the proven context.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_POSITIONANALYSIS_H
#define FOLIO_RAISEATTENTION_POSITIONANALYSIS_H

#include "compiler/RaiseAttention/RaiseUtils.h"

#include <string>

namespace mlir::folio {

/// Succeeds if `value` (a [batch, seq] integer tensor of `func`) equals each
/// new token's position in its sequence whenever the batch is one unpadded
/// sequence, with `attention_mask` all ones and `position_ids`, if the graph
/// has it, bound as generation computes it. Long configurations are tried
/// while their key length is at most `maxContext` (0: no limit);
/// `provenContext` is set to the longest key length that was checked.
/// Fails with `error` saying why, and `errorOp` (may be null) where.
LogicalResult provePositions(func::FuncOp func, ONNXShapeInference &inference,
                             Value value, int64_t maxContext,
                             int64_t &provenContext, std::string &error,
                             Operation *&errorOp);

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_POSITIONANALYSIS_H
