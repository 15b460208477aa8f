//===- AttentionRaise.h - Building folio.attention ---------------*- C++
//-*-===//
//
// The decomposed pattern lives in RaiseAttention.cpp; the fused opset-23
// Attention and com.microsoft GroupQueryAttention in FusedAttention.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RAISEATTENTION_ATTENTIONRAISE_H
#define FOLIO_RAISEATTENTION_ATTENTIONRAISE_H

#include "compiler/RaiseAttention/MaskAnalysis.h"
#include "compiler/RaiseAttention/RaiseUtils.h"

namespace mlir::folio {

struct AttentionContext {
  func::FuncOp func;
  ONNXShapeInference &inference;
  ONNXNodeBuilder &nodes;
  MaskAnalysis &masks;
};

/// Creates folio.attention (result `[B, Hq, S, Dv]`) and records its facts;
/// null with a diagnostic at `anchor` if the operands do not fit.
Value createAttention(AttentionContext &ctx, Operation *anchor, Value q,
                      Value k, Value v, const MaskClass &mask, double scale,
                      double softcap);

/// The KV heads under a grouped-query repeat: when `k` and `v` are their
/// [B, Hkv, L, D] caches repeated to [B, Hq, L, D] (Reshape(Expand|Tile(
/// Unsqueeze(kv, 2))), as transformers' repeat_kv exports), replaces them
/// with the caches themselves, so that attention reads (and page-kv pages)
/// the concat the model returns. Fails with `error` for a repeat that is not
/// grouped-query attention's or one that only one of k and v goes through.
LogicalResult stripKVRepeat(ONNXShapeInference &inf, Value &k, Value &v,
                            std::string &error);

/// Opset-23 `Attention`.
LogicalResult raiseONNXAttention(AttentionContext &ctx, ONNXNodeOp node);
/// com.microsoft `MultiHeadAttention`.
LogicalResult raiseMultiHeadAttention(AttentionContext &ctx, ONNXNodeOp node);
/// com.microsoft `GroupQueryAttention`.
LogicalResult raiseGroupQueryAttention(AttentionContext &ctx, ONNXNodeOp node);

} // namespace mlir::folio

#endif // FOLIO_RAISEATTENTION_ATTENTIONRAISE_H
