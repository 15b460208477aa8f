//===- Passes.td - Raising token-wise ONNX subgraphs -------*- tablegen -*-===//

#ifndef FOLIO_RAISE_PASSES_TD
#define FOLIO_RAISE_PASSES_TD

include "mlir/Pass/PassBase.td"

def FolioRaiseNormsPass : Pass<"folio-raise-norms", "::mlir::func::FuncOp"> {
  let summary = "Raises RMSNorm and LayerNorm subgraphs to folio norm ops";
  let description = [{
    Recognises x * rsqrt(mean(x^2) + eps) * w (as Pow/ReduceMean/Add/Sqrt
    with Div or Reciprocal, Gemma's (1 + w) included), the decomposed and
    opset-17 LayerNormalization, opset-23 RMSNormalization, and ONNX
    Runtime's (Skip)SimplifiedLayerNormalization and SkipLayerNormalization,
    over the last axis, and replaces them by folio.rms_norm /
    folio.layer_norm. A per-head norm written over [b, s * heads, d] between
    two Reshapes is rewritten over [b, s, heads, d]. Run after
    folio-onnx-simplify.
  }];
  let dependentDialects = ["::mlir::folio::FolioDialect"];
}

def FolioRaiseLinearPass : Pass<"folio-raise-linear", "::mlir::func::FuncOp"> {
  let summary = "Raises projections, embeddings and gated MLPs";
  let description = [{
    MatMul by a constant 2-D weight (plus an Add of a constant bias) and
    Gemm with constant B (transB chooses the layout, alpha = beta = 1)
    become folio.linear; Gather from a constant table along axis 0 becomes
    folio.embedding (a following multiplication by a scalar constant, such as
    Gemma's sqrt(hidden), becomes its scale); down(act(gate(x)) * up(x)) with
    SiLU, GELU or tanh-GELU becomes folio.gated_mlp. Run after the attention
    raise, whose MatMuls take no constant weights.
  }];
  let dependentDialects = ["::mlir::folio::FolioDialect"];
}

#endif // FOLIO_RAISE_PASSES_TD
