//===- Passes.td - Raising rotary and attention subgraphs --*- tablegen -*-===//

#ifndef FOLIO_RAISEATTENTION_PASSES_TD
#define FOLIO_RAISEATTENTION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FolioRaiseRotaryPass : Pass<"folio-raise-rotary", "::mlir::func::FuncOp"> {
  let summary = "Raises rotary position embeddings to folio.rotary";
  let description = [{
    Recognises rotary embeddings as exporters write them on imported
    `folio.onnx_node` graphs and replaces each with `folio.rotary` on the
    `[B, heads, S, head_dim]` layout with positions `[B, S]`:
    `x * cos + rotate(x) * sin` with `rotate` the half-split rotate_half
    (Slice/Neg/Concat) or the interleaved rotate_every_two (strided Slices,
    Unsqueeze/Concat/Reshape), partial rotary (a Slice of the first
    `rotary_dim` channels concatenated with the rest), and the fused
    opset-23 `RotaryEmbedding` and com.microsoft `RotaryEmbedding`.

    The cos/sin operands are evaluated on concrete positions: angles linear
    in the position with geometric frequencies become `base` (and `linear`
    scaling); tables gathered by position, and computed angles that are not
    geometric, become the `cos_sin_cache` operand. The positions operand is
    the `[B, S]` integer value the angles are computed from (position_ids,
    or the attention_mask CumSum the graph derives them from).

    ```mlir
    %r = folio.rotary %q, %pos {rotary_dim = 8 : i64, base = 1.0e+04 : f64}
        : (tensor<?x4x?x8xf32>, tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
    ```
  }];
  let options = [
    Option<"tablePositions", "table-positions", "int64_t", /*default=*/"4096",
           "Rows of the cos_sin_cache built when computed angles are not "
           "base^(-2i/d) (positions beyond it are out of range)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::folio::FolioDialect"];
}

def FolioRaiseAttentionPass
    : Pass<"folio-raise-attention", "::mlir::func::FuncOp"> {
  let summary = "Raises attention subgraphs and fused attention ops to "
                "folio.attention";
  let description = [{
    Replaces `MatMul(q, Transpose(k))` -> scale (Mul/Div by a constant, or
    q and k pre-scaled) -> optional soft-cap (Div, Tanh, Mul) -> mask (Add,
    or Where on the scores) -> `Softmax(last axis)` -> `MatMul(., v)` with
    `folio.attention`, and likewise the opset-23 `Attention` and
    com.microsoft `GroupQueryAttention` ops. GQA head repeats
    (Unsqueeze/Expand/Reshape or Tile) are removed so that k/v keep their
    KV heads; cached k/v stay the `Concat(past, new)` values the model also
    returns as `present.*`.

    The mask is recognised by meaning: its subgraph is evaluated on a few
    (batch, past, sequence) configurations, with and without left padding,
    and must equal causal attention, optionally with a sliding window and
    key padding from `attention_mask`; anything else is an error naming the
    node that produced the mask and the first query/key pair that differs.

    ```mlir
    %o = folio.attention %q, %k, %v, %attention_mask
        {scale = 0.35355339059327373 : f64, sliding_window = 8 : i64}
        : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>,
           tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::folio::FolioDialect"];
}

#endif // FOLIO_RAISEATTENTION_PASSES_TD
