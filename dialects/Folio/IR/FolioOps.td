//===- FolioOps.td - folio dialect ops ---------------------*- tablegen -*-===//
//
// Tensor-level ops on the ragged token batch: T is the number of tokens
// scheduled this step across all sequences, S the number of sequences.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_OPS_TD
#define FOLIO_OPS_TD

include "FolioTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class Folio_Op<string mnemonic, list<Trait> traits = []>
    : Op<Folio_Dialect, mnemonic, traits>;

def Folio_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Folio_IntTensor : RankedTensorOf<[AnySignlessInteger]>;

//===----------------------------------------------------------------------===//
// Token-wise ops
//===----------------------------------------------------------------------===//

def Folio_EmbeddingOp : Folio_Op<"embedding", [Pure]> {
  let summary = "gathers embedding rows for token ids, optionally scaled";
  let description = [{
    `result[t, :] = table[ids[t], :] * scale`. The scale is Gemma's
    sqrt(hidden) embedding multiplier; it defaults to 1.

    ```mlir
    %h = folio.embedding %table[%ids] {scale = 8.0 : f64}
        : (tensor<32000x768xf32>, tensor<?xi32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Folio_FloatTensor:$table, Folio_IntTensor:$ids,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_LinearOp : Folio_Op<"linear", [Pure]> {
  let summary = "a matrix product with an optional bias over the last dim";
  let description = [{
    `result[..., n] = sum_k input[..., k] * W(k, n) + bias[n]`, where the
    weight is stored `[K, N]` (`in_out`, the default, ONNX MatMul) or `[N, K]`
    (`out_in`, PyTorch Linear and ONNX Gemm with transB).

    ```mlir
    %y = folio.linear %x, %w, %b
        : (tensor<?x768xf32>, tensor<768x2304xf32>, tensor<2304xf32>)
        -> tensor<?x2304xf32>
    %z = folio.linear %x, %w2 {weight_layout = #folio.weight_layout<out_in>}
        : (tensor<?x768xf32>, tensor<3072x768xf32>) -> tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins
    Folio_FloatTensor:$input, Folio_FloatTensor:$weight,
    Optional<Folio_FloatTensor>:$bias,
    DefaultValuedAttr<Folio_WeightLayoutAttr,
                      "::mlir::folio::WeightLayout::in_out">:$weight_layout);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_RMSNormOp : Folio_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalisation over the last dim";
  let description = [{
    `result = input / sqrt(mean(input^2) + epsilon) * (weight + weight_offset)`.
    `weight_offset = 1.0` expresses Gemma's `(1 + w)` form.

    ```mlir
    %n = folio.rms_norm %x, %w {epsilon = 1.0e-06 : f64}
        : (tensor<?x768xf32>, tensor<768xf32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Folio_FloatTensor:$input, Folio_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_offset);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_LayerNormOp : Folio_Op<"layer_norm", [Pure]> {
  let summary = "layer normalisation over the last dim, optional bias";
  let description = [{
    `result = (input - mean) / sqrt(var + epsilon) * weight + bias`.

    ```mlir
    %n = folio.layer_norm %x, %w, %b
        : (tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>)
        -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Folio_FloatTensor:$input, Folio_FloatTensor:$weight,
                       Optional<Folio_FloatTensor>:$bias,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_RotaryOp : Folio_Op<"rotary", [Pure]> {
  let summary = "rotary position embedding of query or key heads";
  let description = [{
    Rotates the first `rotary_dim` channels of every head of
    `input[T, heads, head_dim]` (positions `[T]`), or of the imported layout
    `input[B, heads, S, head_dim]` (positions `[B, S]`), by angles
    `position * inv_freq[i]`; the
    remaining channels pass through (partial rotary: Phi, GPT-NeoX). `style`
    pairs channels as `half_split` (i, i + rotary_dim/2) or `interleaved`
    (2i, 2i+1). Frequencies are `base^(-2i/rotary_dim)`, rescaled by
    `scaling`: `linear` divides positions by `scaling_factor`; `llama3`
    needs `low_freq_factor`, `high_freq_factor`, `original_max_position`;
    `yarn` needs `original_max_position` (and takes `beta_fast`,
    `beta_slow`). An optional `cos_sin_cache[max_position, rotary_dim]`
    (cos in the first half, sin in the second) replaces the computed angles
    when the model ships its own tables.

    ```mlir
    %q2 = folio.rotary %q, %pos {rotary_dim = 64 : i64, base = 1.0e+04 : f64}
        : (tensor<?x12x64xf32>, tensor<?xi32>) -> tensor<?x12x64xf32>
    ```
  }];
  let arguments = (ins
    Folio_FloatTensor:$input, Folio_IntTensor:$positions,
    Optional<Folio_FloatTensor>:$cos_sin_cache,
    I64Attr:$rotary_dim,
    DefaultValuedAttr<Folio_RopeStyleAttr,
                      "::mlir::folio::RopeStyle::half_split">:$style,
    DefaultValuedAttr<F64Attr, "10000.0">:$base,
    DefaultValuedAttr<Folio_RopeScalingAttr,
                      "::mlir::folio::RopeScaling::none">:$scaling,
    DefaultValuedAttr<F64Attr, "1.0">:$scaling_factor,
    OptionalAttr<F64Attr>:$low_freq_factor,
    OptionalAttr<F64Attr>:$high_freq_factor,
    OptionalAttr<I64Attr>:$original_max_position,
    OptionalAttr<F64Attr>:$beta_fast,
    OptionalAttr<F64Attr>:$beta_slow);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions (`,` $cos_sin_cache^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_GatedMLPOp : Folio_Op<"gated_mlp", [Pure]> {
  let summary = "down(act(gate(x)) * up(x)), the SwiGLU/GeGLU block";
  let description = [{
    Weights follow `weight_layout` as in `folio.linear`: with `in_out`
    (default) gate and up are `[H, F]` and down is `[F, H]`.

    ```mlir
    %y = folio.gated_mlp %x, %wg, %wu, %wd
        {activation = #folio.activation<silu>}
        : (tensor<?x768xf32>, tensor<768x2048xf32>, tensor<768x2048xf32>,
           tensor<2048x768xf32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins
    Folio_FloatTensor:$input, Folio_FloatTensor:$gate_weight,
    Folio_FloatTensor:$up_weight, Folio_FloatTensor:$down_weight,
    DefaultValuedAttr<Folio_ActivationAttr,
                      "::mlir::folio::Activation::silu">:$activation,
    DefaultValuedAttr<Folio_WeightLayoutAttr,
                      "::mlir::folio::WeightLayout::in_out">:$weight_layout);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gate_weight `,` $up_weight `,` $down_weight attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_GatherRowsOp : Folio_Op<"gather_rows", [Pure]> {
  let summary = "selects rows of a [T, N] tensor (the logits rows to keep)";
  let description = [{
    `result[r, :] = input[indices[r], :]`; the serving entry uses it to
    compute logits only for `logits_indices`.

    ```mlir
    %last = folio.gather_rows %h[%idx]
        : (tensor<?x768xf32>, tensor<?xi32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Folio_FloatTensor:$input, Folio_IntTensor:$indices);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention and the paged KV cache
//===----------------------------------------------------------------------===//

def Folio_AttentionOp : Folio_Op<"attention", [Pure]> {
  let summary = "logical multi-head attention over batch x sequence";
  let description = [{
    `query[B, Hq, S, D]`, `key[B, Hkv, L, D]`, `value[B, Hkv, L, Dv]` ->
    `[B, Hq, S, Dv]`, where `L` includes any past tokens and query `s` sits at
    position `L - S + s`. `Hq` must be a multiple of `Hkv` (GQA). `scale`
    multiplies QK^T; `softcap > 0` applies `softcap * tanh(s / softcap)`;
    `sliding_window > 0` lets a query see only the last `sliding_window`
    keys up to itself; the optional `key_padding_mask[B, L]` (non-zero =
    keep) carries the attention_mask input. This op exists only between the
    raise and page-kv passes.

    ```mlir
    %o = folio.attention %q, %k, %v {scale = 0.125 : f64}
        : (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>)
        -> tensor<1x8x?x64xf32>
    ```
  }];
  let arguments = (ins Folio_FloatTensor:$query, Folio_FloatTensor:$key,
                       Folio_FloatTensor:$value,
                       Optional<RankedTensorOf<[AnySignlessInteger, I1]>>:
                           $key_padding_mask,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "true">:$causal,
                       DefaultValuedAttr<I64Attr, "0">:$sliding_window,
                       DefaultValuedAttr<F64Attr, "0.0">:$softcap);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $key_padding_mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_KVWriteOp : Folio_Op<"kv_write", [AttrSizedOperandSegments]> {
  let summary = "stores this step's K and V rows into their cache slots";
  let description = [{
    Writes `key[T, heads, head_dim]` and `value[T, heads, head_dim]` to slot
    `slot_mapping[t]` (block * block_size + offset; negative = padding,
    skipped), converting or quantizing to the cache's dtype and scale layout.
    A cache with static scales (`per_head`, `per_tensor`) takes them as
    `scales(k_scale, v_scale)`: f32 `[heads]` or rank 0, stored element =
    x / scale; every other cache takes none.

    ```mlir
    folio.kv_write %cache, %k, %v, %slots
        : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f16>,
          tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi32>
    folio.kv_write %fp8, %k, %v, %slots scales(%ks, %vs)
        : !folio.kv_cache<heads = 2, head_dim = 64, block = 16,
                          dtype = f8E4M3FN, scale = per_head>,
          tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi32>,
          tensor<2xf32>, tensor<2xf32>
    ```
  }];
  let arguments = (ins
    Arg<Folio_KVCacheType, "the layer's cache",
        [MemWrite<Folio_KVCacheResource>]>:$cache,
    Folio_FloatTensor:$key, Folio_FloatTensor:$value,
    Folio_IntTensor:$slot_mapping,
    Optional<Folio_FloatTensor>:$k_scale,
    Optional<Folio_FloatTensor>:$v_scale);
  let assemblyFormat = [{
    $cache `,` $key `,` $value `,` $slot_mapping
    (`scales` `(` $k_scale^ `,` $v_scale `)`)? attr-dict `:`
    qualified(type($cache)) `,` type($key) `,` type($value) `,`
    type($slot_mapping) (`,` type($k_scale)^ `,` type($v_scale))?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$cache, "::mlir::Value":$key,
                   "::mlir::Value":$value, "::mlir::Value":$slot_mapping), [{
      build($_builder, $_state, cache, key, value, slot_mapping,
            ::mlir::Value(), ::mlir::Value());
    }]>
  ];
  let hasVerifier = 1;
}

def Folio_PagedAttentionOp : Folio_Op<"paged_attention",
                                      [AttrSizedOperandSegments]> {
  let summary = "ragged causal attention over a paged KV cache";
  let description = [{
    For each sequence `s`, its query tokens are
    `query[query_start_loc[s] : query_start_loc[s+1]]` and they are the last
    tokens of its `seq_lens[s]`-token context, whose K/V live in the blocks
    `block_tables[s, :]`. Prefill chunks, decode tokens and speculative tokens
    mix freely in one call. `query[T, Hq, D]` with `Hq` a multiple of the
    cache's heads (GQA) and `D` its head_dim; the result is `[T, Hq, D]`.
    Quantized caches are dequantized on read; a cache with static scales
    takes the same `scales(k_scale, v_scale)` as its `folio.kv_write`.

    ```mlir
    %o = folio.paged_attention %q, %cache, %bt, %lens, %qsl
        {scale = 0.125 : f64}
        : (tensor<?x8x64xf32>,
           !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f16>,
           tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x64xf32>
    %p = folio.paged_attention %q, %fp8, %bt, %lens, %qsl scales(%ks, %vs)
        {scale = 0.125 : f64}
        : (tensor<?x8x64xf32>,
           !folio.kv_cache<heads = 2, head_dim = 64, block = 16,
                           dtype = f8E4M3FN, scale = per_head>,
           tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2xf32>,
           tensor<2xf32>) -> tensor<?x8x64xf32>
    ```
  }];
  let arguments = (ins
    Folio_FloatTensor:$query,
    Arg<Folio_KVCacheType, "the layer's cache",
        [MemRead<Folio_KVCacheResource>]>:$cache,
    Folio_IntTensor:$block_tables, Folio_IntTensor:$seq_lens,
    Folio_IntTensor:$query_start_loc,
    Optional<Folio_FloatTensor>:$k_scale,
    Optional<Folio_FloatTensor>:$v_scale,
    F64Attr:$scale,
    DefaultValuedAttr<BoolAttr, "true">:$causal,
    DefaultValuedAttr<I64Attr, "0">:$sliding_window,
    DefaultValuedAttr<F64Attr, "0.0">:$softcap);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $cache `,` $block_tables `,` $seq_lens `,` $query_start_loc
    (`scales` `(` $k_scale^ `,` $v_scale `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Folio_QuantizeOp : Folio_Op<"quantize", [Pure]> {
  let summary = "quantizes a float tensor to int8/int4/int2 or fp8";
  let description = [{
    `result = round(input / scale) + zero_point`, saturated to the result
    type (fp8: converted with saturation). `scale` is a scalar (rank 0,
    per tensor) or has the input's rank with each dim equal to the input's
    or 1 (per head, per token-head, per channel). `zero_point` (asymmetric
    integer quantization, KIVI) has the scale's shape; fp8 takes none.

    ```mlir
    %q = folio.quantize %x, %s
        : (tensor<?x8x64xf32>, tensor<?x8x1xf32>) -> tensor<?x8x64xi8>
    ```
  }];
  let arguments = (ins Folio_FloatTensor:$input, Folio_FloatTensor:$scale,
                       Optional<RankedTensorOf<[AnyFloat, AnySignlessInteger]>>:
                           $zero_point);
  let results = (outs RankedTensorOf<[AnySignlessInteger, AnyFloat]>:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $zero_point^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_DequantizeOp : Folio_Op<"dequantize", [Pure]> {
  let summary = "the inverse of folio.quantize";
  let description = [{
    `result = (input - zero_point) * scale`, with the same scale and
    zero-point shapes as `folio.quantize`; integer codes are signed.

    `block_size > 0` also allows blocked scales, ONNX DequantizeLinear's
    block quantization and the groups of int4 weights: a scale dim may then
    be `ceil(d / block_size)` of the data's `d`, element `j` along it
    reading scale `j / block_size`. Quantized weights imported from ONNX
    (DequantizeLinear over constant weights, com.microsoft MatMulNBits)
    take this form with constant operands; the plan stores them packed for
    the kernels (compiler/Plan/StoreWeights.h).

    `int8_activations` (integer codes only) marks a weight whose consumers
    may round their input to int8 per block, as MatMulNBits with
    `accuracy_level = 4` allows: the plan then stores it with int8
    activations (plan::StoredWeight::activations).

    ```mlir
    %x = folio.dequantize %q, %s
        : (tensor<?x8x64xi8>, tensor<?x8x1xf32>) -> tensor<?x8x64xf32>
    %w = folio.dequantize %codes, %scales, %zero_points {block_size = 32}
        : (tensor<64x96xi4>, tensor<64x3xf32>, tensor<64x3xi4>)
        -> tensor<64x96xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnySignlessInteger, AnyFloat]>:$input,
                       Folio_FloatTensor:$scale,
                       Optional<RankedTensorOf<[AnyFloat, AnySignlessInteger]>>:
                           $zero_point,
                       DefaultValuedAttr<I64Attr, "0">:$block_size,
                       UnitAttr:$int8_activations);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $zero_point^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Speculative decoding
//===----------------------------------------------------------------------===//

def Folio_SpecVerifyOp : Folio_Op<"spec_verify",
                                  [Pure, AttrSizedOperandSegments]> {
  let summary = "lossless verification of speculative tokens";
  let description = [{
    For `S` sequences with up to `K` draft tokens each,
    `target_logits[S, K+1, V]` are the final logits of the distribution
    each row samples from, at the K draft positions and one past them: the
    runtime's sampler has already applied penalties, temperature, min-p,
    top-k and top-p (masked tokens at -inf), so p_j = softmax(row j).
    `draft_tokens[S, K]` are -1 padded after a sequence's own drafts.
    `greedy`: accept the longest prefix of drafts equal to the target's
    argmax, then emit the target's argmax at the first mismatch (or the
    bonus token). `sample`: Leviathan/Chen rejection sampling with
    `uniforms[S, K+1]` in [0, 1); `draft_probs[S, K, V]` are the draft's
    probabilities from the same logits processing (absent: a deterministic
    proposer such as n-gram lookup, i.e. one-hot drafts). Results:
    `accepted[S]` (0..K) and `tokens[S, K+1]`: the accepted drafts, then
    the corrected or bonus token, padded with -1. Logits, probabilities and
    uniforms are f32; tokens and counts i32 (what the kernels take).

    ```mlir
    %n, %toks = folio.spec_verify <greedy> %logits, %drafts
        : tensor<?x5x32000xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
    %m, %ts = folio.spec_verify <sample> %logits, %drafts
        draft_probs(%q : tensor<?x4x32000xf32>) uniforms(%u : tensor<?x5xf32>)
        : tensor<?x5x32000xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
    ```
  }];
  let arguments = (ins
    Folio_SpecVerifyModeAttr:$mode,
    Folio_FloatTensor:$target_logits, Folio_IntTensor:$draft_tokens,
    Optional<Folio_FloatTensor>:$draft_probs,
    Optional<Folio_FloatTensor>:$uniforms);
  let results = (outs Folio_IntTensor:$accepted, Folio_IntTensor:$tokens);
  let assemblyFormat = [{
    $mode $target_logits `,` $draft_tokens
    (`draft_probs` `(` $draft_probs^ `:` type($draft_probs) `)`)?
    (`uniforms` `(` $uniforms^ `:` type($uniforms) `)`)?
    attr-dict `:` type($target_logits) `,` type($draft_tokens) `->`
    type($accepted) `,` type($tokens)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise and data movement: what is left of a model outside the big ops
//===----------------------------------------------------------------------===//

def Folio_BinaryOp : Folio_Op<"binary", [Pure]> {
  let summary = "an elementwise binary op with NumPy broadcasting";
  let description = [{
    `result = lhs <kind> rhs` elementwise, where `kind` is add, sub, mul,
    div, pow, max or min. The operands broadcast as NumPy (and ONNX) do:
    trailing dims align, a dim of 1 stretches. Residual adds, scalings and
    the pieces of activations written out by exporters end up here; the
    fuse pass groups chains of them into one kernel.

    ```mlir
    %r = folio.binary add %x, %y
        : (tensor<1x?x768xf32>, tensor<1x?x768xf32>) -> tensor<1x?x768xf32>
    %s = folio.binary mul %x, %c
        : (tensor<1x?x768xf32>, tensor<f32>) -> tensor<1x?x768xf32>
    ```
  }];
  let arguments = (ins Folio_BinaryKindAttr:$kind, AnyRankedTensor:$lhs,
                       AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    custom<BinaryKind>($kind) $lhs `,` $rhs attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_UnaryOp : Folio_Op<"unary", [Pure]> {
  let summary = "an elementwise unary op";
  let description = [{
    `result = kind(input)` elementwise: neg, exp, sqrt, tanh, erf, sigmoid,
    relu, abs or reciprocal, on float tensors.

    ```mlir
    %t = folio.unary tanh %x : (tensor<1x?x256xf32>) -> tensor<1x?x256xf32>
    ```
  }];
  let arguments = (ins Folio_UnaryKindAttr:$kind, Folio_FloatTensor:$input);
  let results = (outs Folio_FloatTensor:$result);
  let assemblyFormat = [{
    custom<UnaryKind>($kind) $input attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_CastOp : Folio_Op<"cast", [Pure]> {
  let summary = "converts a tensor's element type";
  let description = [{
    Same shape, another element type: integer widening and narrowing
    (sign-extending), and conversions between f32, f16 and bf16
    (round to nearest even). The serving entry widens its i32 token ids and
    positions with it.

    ```mlir
    %ids = folio.cast %tokens : tensor<?xi32> to tensor<?xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Folio_ReshapeOp : Folio_Op<"reshape", [Pure]> {
  let summary = "the same elements under another static shape (a view)";
  let description = [{
    Reinterprets the row-major elements of `input` with the result type's
    shape. Every result dim is static except at most one, which the runtime
    computes from the element count (the step's token count): shape
    arithmetic is folded at compile time, so no shape is computed while
    serving. A reshape never copies.

    ```mlir
    %h = folio.reshape %x : tensor<1x?x768xf32> to tensor<1x?x12x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Folio_TransposeOp : Folio_Op<"transpose", [Pure]> {
  let summary = "permutes the dims of a tensor";
  let description = [{
    `result` dim `i` is `input` dim `permutation[i]`. The CPU executor
    copies rows (or, when the permutation keeps the element order, makes a
    view).

    ```mlir
    %t = folio.transpose %x [0, 2, 1, 3]
        : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input,
                       DenseI64ArrayAttr:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input $permutation attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Folio_SliceOp : Folio_Op<"slice", [Pure]> {
  let summary = "a contiguous range of one static dim";
  let description = [{
    `result = input[..., start : start + size, ...]` along `axis`, which
    must be a static dim (slicing along the token dim would not be
    token-wise). Splits of fused projections (q/k/v from one matrix) lower
    to one slice per part.

    ```mlir
    %q = folio.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 32 : i64}
        : (tensor<1x?x96xf32>) -> tensor<1x?x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, I64Attr:$start,
                       I64Attr:$size);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Folio_ConcatOp : Folio_Op<"concat", [Pure]> {
  let summary = "joins tensors along one static dim";
  let description = [{
    The inputs agree in every dim but `axis`, where the result has their
    sum. Partial rotary (the rotated part joined to the pass-through part)
    is the usual user.

    ```mlir
    %c = folio.concat %a, %b {axis = 2 : i64}
        : (tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel regions
//===----------------------------------------------------------------------===//

def Folio_KernelOp : Folio_Op<"kernel", [IsolatedFromAbove,
                                         RecursiveMemoryEffects]> {
  let summary = "one fused kernel: codegen works region by region";
  let description = [{
    The body computes the results from the entry block's arguments, which
    mirror the operands one to one, and ends with `folio.yield`. Being
    isolated from above, a kernel names everything it touches, so the
    codegen can specialise and emit it alone.

    ```mlir
    %y = folio.kernel "rms_norm_linear" (%x, %w, %g)
        : (tensor<?x768xf32>, tensor<768x768xf32>, tensor<768xf32>)
        -> tensor<?x768xf32> {
    ^bb0(%a: tensor<?x768xf32>, %b: tensor<768x768xf32>, %c: tensor<768xf32>):
      %n = folio.rms_norm %a, %c
          : (tensor<?x768xf32>, tensor<768xf32>) -> tensor<?x768xf32>
      %r = folio.linear %n, %b
          : (tensor<?x768xf32>, tensor<768x768xf32>) -> tensor<?x768xf32>
      folio.yield %r : tensor<?x768xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, results)
    $body
  }];
  let hasVerifier = 1;
}

def Folio_YieldOp : Folio_Op<"yield", [Pure, Terminator, ReturnLike,
                                       HasParent<"KernelOp">]> {
  let summary = "returns a kernel region's results";
  let description = [{
    ```mlir
    folio.yield %r : tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

def Folio_ONNXNodeOp : Folio_Op<"onnx_node", [Pure]> {
  let summary = "one imported ONNX node, before conversion";
  let description = [{
    The importer turns every ONNX node into one `folio.onnx_node` that keeps
    its op type, domain, the model's opset for that domain and its
    attributes, without interpreting them (as torch-mlir's ONNX importer
    does). Conversion then picks a handler by (domain, op type,
    since-version <= opset), so supporting a new op or op version is a new
    handler, never a change to the importer. `absent_inputs` lists the input
    positions the node left empty (optional inputs); `operands` holds the
    present ones in order. The op exists only between import and conversion.

    ```mlir
    %y = folio.onnx_node "Softmax"(%x)
        {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}}
        : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
    %s = folio.onnx_node "Slice"(%d, %starts, %ends, %steps)
        {opset = 17 : i64, absent_inputs = array<i64: 3>}
        : (tensor<?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>)
        -> tensor<?xf32>
    ```
  }];
  let arguments = (ins
    StrAttr:$op_type,
    DefaultValuedStrAttr<StrAttr, "">:$domain,
    I64Attr:$opset,
    DefaultValuedStrAttr<StrAttr, "">:$node_name,
    DefaultValuedAttr<DictionaryAttr, "{}">:$onnx_attributes,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$absent_inputs,
    Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The node's input count as ONNX sees it, absent inputs included.
    int64_t getNumONNXInputs() {
      return getInputs().size() + getAbsentInputs().size();
    }
  }];
}

#endif // FOLIO_OPS_TD
