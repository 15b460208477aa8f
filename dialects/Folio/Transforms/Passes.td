//===- Passes.td - passes over folio ops only ------------*- tablegen -*-===//

#ifndef FOLIO_TRANSFORMS_PASSES_TD
#define FOLIO_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FolioVerifyServingContractPass
    : Pass<"folio-verify-serving-contract", "::mlir::ModuleOp"> {
  let summary = "Checks that the module satisfies the serving contract";
  let description = [{
    The phase boundary after page-kv: `forward` has the contract's
    arguments in order with their types, one `!folio.kv_cache` per layer,
    each written by exactly one `folio.kv_write` and read by
    `folio.paged_attention`, returns one logits matrix, and holds no
    `folio.attention` or KV input/output of the imported graph.
  }];
}

def FolioQuantizeKVPass : Pass<"folio-quantize-kv", "::mlir::ModuleOp"> {
  let summary = "Gives each layer's KV cache the configured dtype and scale "
                "layout";
  let description = [{
    Reads the module's `folio.kv_cache_dtype` (set by folio-set-target) and
    retypes every `!folio.kv_cache` argument of `forward` (page-kv's
    `kv_cache.N`, layer N):

    | dtype | cache | scales |
    |---|---|---|
    | f32 | f32 (also from an f16 or bf16 model) | none |
    | f16, bf16 | f16, bf16 | none |
    | fp8_e4m3, fp8_e5m2 | f8E4M3FN, f8E5M2 | per_head, static |
    | int8 | i8 | per_token_head, computed when written |
    | int4 | i4 | per_token_group, `group = group-size` (0: the largest even divisor of head_dim up to 32) |
    | int2 | i2 | kivi: keys per channel over a block, values per token over `group = group-size` channels (default as for int4), `residual = residual` (0: 128 rounded up to whole blocks) |

    int2 (KIVI) needs head_dim a multiple of 4; an explicit `residual` must
    be a positive multiple of the block size, and is an error for any other
    dtype. Layers in `skip-layers` keep a bf16 cache when
    the dtype is quantized. fp8 scales are `arith.constant`s passed to every
    `folio.kv_write` and `folio.paged_attention` of the cache:
    `absmax / fp8max` per head (448 for e4m3, 57344 for e5m2) from the
    module's `folio.kv_calibration`, a dense f32 `[layers, 2, kv_heads]` of
    the calibrated abs-max of K (index 0) and V (index 1); a head whose
    abs-max is 0 gets `1 / fp8max`. Without calibration every scale is 1.0
    (|x| <= fp8max stays in range) and the pass warns.

    ```mlir
    // folio.kv_cache_dtype = "fp8_e4m3", no calibration:
    folio.kv_write %c, %k, %v, %slots
        : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, ...
    // becomes
    %ks = arith.constant dense<1.000000e+00> : tensor<2xf32>
    %vs = arith.constant dense<1.000000e+00> : tensor<2xf32>
    folio.kv_write %c, %k, %v, %slots scales(%ks, %vs)
        : !folio.kv_cache<heads = 2, head_dim = 8, block = 16,
                          dtype = f8E4M3FN, scale = per_head>, ...
    ```
  }];
  let options = [
    ListOption<"skipLayers", "skip-layers", "int64_t",
               "Layers whose caches stay at 16 bits (bf16) when the dtype is "
               "quantized">,
    Option<"groupSize", "group-size", "int64_t", /*default=*/"0",
           "Elements per scale group of an int4 cache (even, divides "
           "head_dim) or per value group of an int2 (KIVI) cache (divides "
           "head_dim); 0: the largest even divisor of head_dim up to 32">,
    Option<"residual", "residual", "int64_t", /*default=*/"0",
           "Tokens per sequence an int2 (KIVI) cache keeps in full "
           "precision (a positive multiple of the block size); 0: 128 "
           "rounded up to a multiple of the block size">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FolioVerifyLoweredPass
    : Pass<"folio-verify-lowered", "::mlir::ModuleOp"> {
  let summary = "Checks that the serving entry holds only folio ops and "
                "constants";
  let description = [{
    The phase boundary after lowering: every op of every function is a folio
    op (not `folio.onnx_node`, not the logical `folio.attention`), an
    `arith.constant` or the return, and `folio.spec_verify` appears only
    outside `forward` (in the verify entries folio-speculative adds). Anything else stops the compiler: a
    leftover ONNX node is named with its op, domain, opset and the reason
    the lowering gave (its `folio.lowering_error`), so a model with an op
    Folio cannot lower fails at compile time, never at load or run time.
  }];
}

def FolioSpeculativePass : Pass<"folio-speculative", "::mlir::ModuleOp"> {
  let summary = "Adds the verify entries of speculative decoding next to "
                "forward";
  let description = [{
    Adds three public functions whose body is one `folio.spec_verify`, with
    the sequence count and the draft length dynamic and the vocabulary that
    of `forward`'s logits (so the plan knows V). One entry per mode keeps
    each signature fixed: an executor binds every argument, and none is
    an optional that may or may not be there.

    | entry | mode | arguments |
    |---|---|---|
    | `verify_greedy` | greedy | target_logits, draft_tokens |
    | `verify_sample` | sample | target_logits, draft_tokens, draft_probs, uniforms |
    | `verify_sample_onehot` | sample, one-hot drafts (n-gram) | target_logits, draft_tokens, uniforms |

    Arguments carry their names in `folio.onnx_name`, as the serving
    entry's do. A module without `forward` is left alone; an entry that
    already exists with its signature is kept (running the pass twice adds
    nothing), and another symbol of an entry's name is an error.

    ```mlir
    func.func @verify_greedy(
        %target_logits: tensor<?x?x256xf32> {folio.onnx_name = "target_logits"},
        %draft_tokens: tensor<?x?xi32> {folio.onnx_name = "draft_tokens"})
        -> (tensor<?xi32>, tensor<?x?xi32>) {
      %accepted, %tokens = folio.spec_verify <greedy> %target_logits, %draft_tokens
          : tensor<?x?x256xf32>, tensor<?x?xi32> -> tensor<?xi32>, tensor<?x?xi32>
      return %accepted, %tokens : tensor<?xi32>, tensor<?x?xi32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::folio::FolioDialect"];
}

def FolioFoldEmbeddingOffsetsPass
    : Pass<"folio-fold-embedding-offsets", "::mlir::func::FuncOp"> {
  let summary = "Folds a constant added to the positions into the rows of "
                "the position table they index";
  let description = [{
    Matches `folio.embedding` of a constant table indexed by
    `positions + c` (a constant integer 0 < c < rows; the positions are the
    entry's `positions` argument through integer widening and reshapes, so
    never negative) and indexes rows [c, rows) of the table by the positions
    instead. OPT's learned position embedding is offset by 2 this way; the
    integer addition it needed per step goes, and the plan's
    `max_positions` (the table's rows) becomes the model's real limit.

    ```mlir
    %p1 = folio.binary add %p, %c2 : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
    %e = folio.embedding %table[%p1] : (tensor<130x32xf32>, tensor<1x?xi64>) -> tensor<1x?x32xf32>
    // becomes
    %e = folio.embedding %rows2to130[%p] : (tensor<128x32xf32>, tensor<1x?xi64>) -> tensor<1x?x32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FolioFoldUnitTransposesPass
    : Pass<"folio-fold-unit-transposes", "::mlir::func::FuncOp"> {
  let summary = "Makes transposes that move only dims of size 1 reshapes";
  let description = [{
    Three rewrites, for multi-query attention as torch.export writes it
    (heads moved to the front, K's and V's single head gathered there):
    a `folio.transpose` whose users are all `folio.slice`s becomes, per
    slice, a slice of its input on the permuted axis and a transpose of
    that part; a transpose that keeps the order of every dim not of size 1
    becomes a `folio.reshape` (the same elements in the same order); and a
    `folio.rotary` of a `[B, 1, S, D]` tensor becomes the serving form's
    rotary of `[B * S, 1, D]` (one head: the same memory) between reshapes.

    ```mlir
    %t = folio.transpose %x [2, 0, 1, 3] : (tensor<1x?x6x8xf32>) -> tensor<6x1x?x8xf32>
    %k = folio.slice %t {axis = 0 : i64, size = 1 : i64, start = 4 : i64} : (tensor<6x1x?x8xf32>) -> tensor<1x1x?x8xf32>
    // becomes
    %s = folio.slice %x {axis = 2 : i64, size = 1 : i64, start = 4 : i64} : (tensor<1x?x6x8xf32>) -> tensor<1x?x1x8xf32>
    %k = folio.reshape %s : tensor<1x?x1x8xf32> to tensor<1x1x?x8xf32>
    ```
  }];
}

def FolioSinkGatherRowsPass
    : Pass<"folio-sink-gather-rows", "::mlir::func::FuncOp"> {
  let summary = "Runs the lm_head (and what follows it) on the gathered "
                "logits rows only";
  let description = [{
    Matches `folio.gather_rows` of a value computed from a `folio.linear`
    by row-wise ops only (folio.reshape keeping the last dim, folio.unary,
    folio.binary with a constant that broadcasts along rows), each used
    once, and moves the gather before the linear: the lm_head of a prefill
    then multiplies the sampled rows, not every token.

    ```mlir
    %l = folio.linear %h, %w : (tensor<1x?x64xf32>, tensor<64x256xf32>) -> tensor<1x?x256xf32>
    %r = folio.reshape %l : tensor<1x?x256xf32> to tensor<?x256xf32>
    %g = folio.gather_rows %r[%idx] : (tensor<?x256xf32>, tensor<?xi32>) -> tensor<?x256xf32>
    // becomes
    %x = folio.reshape %h : tensor<1x?x64xf32> to tensor<?x64xf32>
    %p = folio.gather_rows %x[%idx] : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
    %g = folio.linear %p, %w : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
    ```
  }];
}

def FolioStackSiblingLinearsPass
    : Pass<"folio-stack-sibling-linears", "::mlir::func::FuncOp"> {
  let summary = "Runs linears that share their input (q, k, v) as one over "
                "stacked weights";
  let description = [{
    Groups `folio.linear` ops with the same input, weight layout, weight
    element type, in-features and bias presence whose weights (and biases)
    are constants, concatenates the weights along the output dim into one
    constant (a resource blob), runs one `folio.linear` and gives each
    member its columns through `folio.slice` on the last dim.

    ```mlir
    %q = folio.linear %x, %wq : (tensor<1x?x32xf32>, tensor<32x32xf32>) -> tensor<1x?x32xf32>
    %k = folio.linear %x, %wk : (tensor<1x?x32xf32>, tensor<32x16xf32>) -> tensor<1x?x16xf32>
    // becomes
    %qk = folio.linear %x, %wqk : (tensor<1x?x32xf32>, tensor<32x48xf32>) -> tensor<1x?x48xf32>
    %q = folio.slice %qk {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : ...
    %k = folio.slice %qk {axis = 2 : i64, start = 32 : i64, size = 16 : i64} : ...
    ```
  }];
}

def FolioFusePass : Pass<"folio-fuse", "::mlir::func::FuncOp"> {
  let summary = "Groups the lowered entry into folio.kernel regions";
  let description = [{
    Decides kernel boundaries for every backend (docs/fusion.md): a residual
    add with the norm reading it (`add_rms_norm`, `add_layer_norm`), the
    keys' rotary with the cache write (`rotary_kv_write`), a linear with
    the pointwise ops after it (`linear_epilogue`), pointwise chains
    (`elementwise`), the logits gather with the final norm, lm_head and
    soft-cap (`gather_rows_linear`), and every other op in a kernel of its
    own named after it (`paged_attention`, `gated_mlp`, ...). Views
    (`folio.reshape`, `folio.slice`) are cloned into the kernels that read
    them. Afterwards the entry holds only kernels, constants and the return.
  }];
}

#endif // FOLIO_TRANSFORMS_PASSES_TD
