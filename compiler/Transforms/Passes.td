//===- Passes.td - compiler passes over imported graphs ----*- tablegen -*-===//
//
// Passes that read ONNX facts (compiler/ONNXOps): the dialect's own passes,
// which know only folio ops, stay in dialects/Folio/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_COMPILER_TRANSFORMS_PASSES_TD
#define FOLIO_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FolioSetTargetPass : Pass<"folio-set-target", "::mlir::ModuleOp"> {
  let summary = "Records the compile target, KV-cache dtype and block size "
                "on the module";
  let description = [{
    Resolves the user's `target`, `kv-cache-dtype` (with `auto` becoming
    fp8_e4m3 on sm_89/sm_90a and int8 elsewhere) and `block-size` once, and
    stores them as the module attributes `folio.target`,
    `folio.kv_cache_dtype` and `folio.block_size`, which every later pass
    reads. Target selection is an explicit pass rather than a side effect of
    the tool, so `folio-opt` reproduces what `folioc` does.

    Unknown names, invalid block sizes, and a module already configured
    differently are errors.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Compile target: cpu, sm_80, sm_86, sm_89, sm_90a">,
    Option<"kvCacheDtype", "kv-cache-dtype", "std::string",
           /*default=*/"\"auto\"",
           "KV-cache dtype: auto, f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, "
           "int4, int2">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"0",
           "KV-cache block size in tokens: a power of two from 1 to 256; "
           "0: 16, or 32 for int2 caches">,
  ];
}

def FolioWidenFloatsPass : Pass<"folio-widen-floats", "::mlir::ModuleOp"> {
  let summary = "Computes the f16 and bf16 values of an imported graph in f32";
  let description = [{
    Folio's kernels compute activations in f32 (weights are stored as
    `--weight-dtype` says, independently). A graph exported in 16 bits (ONNX
    Runtime GenAI's model builder at `-p fp16`, a model exported after
    `.half()`) has f16 or bf16 activations, and every op would need a 16-bit
    form. This pass retypes every f16 and bf16 tensor to f32 instead:
    function arguments and results, node results, constants (each value
    converted exactly: f32 holds every f16 and bf16 number) and the ONNX
    attributes that name the type (an integer `to`, `dtype` or
    `output_dtype`, and tensor attributes such as Constant's or
    ConstantOfShape's `value`). The graph then computes what its f32 twin
    computes, without the rounding to 16 bits after each op; a Cast to f16
    becomes a Cast to f32. The module records the source type as
    `folio.source_float` ("f16" or "bf16"), from which `folioc` stores the
    weights in that type by default, so that they keep every value exactly.
    A graph that mixes f16 and bf16 is refused.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FolioONNXSimplifyPass : Pass<"folio-onnx-simplify", "::mlir::func::FuncOp"> {
  let summary = "Folds shape subgraphs and removes no-op ONNX nodes";
  let description = [{
    Runs symbolic shape inference over an imported function, then:
    replaces every `folio.onnx_node` whose results are fully known (shape
    arithmetic, constants, the 1/sqrt(d) scale) by `arith.constant`;
    forwards nodes that do nothing for the inferred shapes (Identity, Cast to
    the same type, Reshape/Expand/Squeeze/Unsqueeze to the same dims, an
    identity Transpose, a Transpose undoing an earlier one, possibly through
    tensor.cast views, a single-input Concat; a tensor.cast keeps users'
    types where the forwarded value's differ); refines result types to the
    inferred ones; and erases what is left unused. Raising then sees the
    computation without the exporters' shape bookkeeping.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FolioFoldRotaryTransposesPass
    : Pass<"folio-fold-rotary-transposes", "::mlir::func::FuncOp"> {
  let summary = "Applies rotary in the token-major layout instead of between "
                "two transposes";
  let description = [{
    Matches `Transpose([0, 2, 1, 3])` -> rank-4 `folio.rotary` ->
    `Transpose([0, 2, 1, 3])` (through `tensor.cast` views, the rotary and
    each cast having that one user) and replaces the pair of copies by
    `tensor.collapse_shape` of the [B, S, heads, head_dim] input and of the
    [B, S] positions to tokens, the serving form of `folio.rotary`, and
    `tensor.expand_shape` back. This is the shape page-kv leaves for q and k
    of every exported decoder: two transposes per tensor per layer go.
    First, a `Transpose([0, 2, 1, 3])` feeding a `Slice` or `Split` that cuts
    only dims 0 and 3 moves below it (the cut reads the token-major tensor
    with the same operands), so a model that slices heads after transposing them
    (GPT-NeoX's fused per-head q|k|v) folds too, and a slice that is
    transposed straight back (its v) loses both transposes.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def FolioPageKVPass : Pass<"folio-page-kv", "::mlir::ModuleOp"> {
  let summary = "Turns the batch x seq graph into the ragged-token serving "
                "entry with paged KV caches";
  let description = [{
    Rewrites the imported entry (`main`, after the raise passes) into
    `forward(tokens, positions, query_start_loc, seq_lens, block_tables,
    slot_mapping, logits_indices, caches...) -> logits[rows, vocab]`
    (DESIGN.md, the serving contract): batch becomes 1 and the sequence the
    T tokens of the step; each `folio.attention` becomes one
    `folio.kv_write` of the step's new K/V rows and one
    `folio.paged_attention`; the past/present KV inputs and outputs and the
    attention_mask disappear; position_ids, and positions the graph computes
    (from the past length, Range(0, seq) without a cache, the mask's
    cumsum) once proven equal to each token's position in its sequence,
    become `positions`, else the rotary or position embedding is refused.
    It then proves that everything outside attention is token-wise, naming
    the node that is not. Cache dtype is the model's;
    block size is the module's `folio.block_size` (16 if unset).
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "The imported function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def FolioLowerONNXPass : Pass<"folio-lower-onnx", "::mlir::func::FuncOp"> {
  let summary = "Lowers what is left of the model after page-kv to folio ops "
                "with static shapes";
  let description = [{
    Runs shape inference once, gives every value the most precise type it
    proves (only the token count stays dynamic), then lowers each remaining
    `folio.onnx_node` through the lowering hook of its (domain, op,
    since-version) entry: Add/Sub/Mul/Div/Pow/Max/Min to `folio.binary`,
    Neg/Exp/Sqrt/Tanh/Erf/Sigmoid/Relu/Abs/Reciprocal to `folio.unary`,
    Gelu to its erf or tanh formula in those (with `arith.constant` scalars),
    Cast to `folio.cast`, Reshape/Unsqueeze/Squeeze/Flatten to
    `folio.reshape`, Transpose, Slice/Split and Concat to `folio.transpose`,
    `folio.slice` and `folio.concat`. page-kv's `tensor.expand_shape` /
    `collapse_shape` become `folio.reshape`, `tensor.cast` its source and
    `arith.extsi`/`trunci` on tensors `folio.cast`. Shape arithmetic left
    without users is erased. A node that cannot be lowered keeps a
    `folio.lowering_error` attribute saying why; the pass itself does not
    fail, `folio-verify-lowered` does.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // FOLIO_COMPILER_TRANSFORMS_PASSES_TD
