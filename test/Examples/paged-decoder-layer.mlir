// RUN: folio-opt %s | folio-opt | FileCheck %s
// RUN: folio-opt %s --folio-set-target="target=sm_90a" | FileCheck %s --check-prefix=COMPILED

// Tests that the README's example, one Llama-style decoder layer in the
// serving contract, parses, verifies and takes a target configuration.
// tokens/positions/slot_mapping are the flattened batch of this step;
// block_tables/seq_lens/query_start_loc describe its sequences.

// CHECK-LABEL: func.func @forward
// CHECK: folio.kv_write
// CHECK: folio.paged_attention
// CHECK: folio.gather_rows
// COMPILED: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "fp8_e4m3", folio.target = "sm_90a"}
module {
  func.func @forward(
      %tokens: tensor<?xi32>, %positions: tensor<?xi32>,
      %query_start_loc: tensor<?xi32>, %seq_lens: tensor<?xi32>,
      %block_tables: tensor<?x?xi32>, %slot_mapping: tensor<?xi32>,
      %logits_indices: tensor<?xi32>,
      %cache: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>,
      %embed: tensor<256x64xf32>, %attn_norm: tensor<64xf32>,
      %wq: tensor<64x64xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>,
      %wo: tensor<64x64xf32>, %mlp_norm: tensor<64xf32>,
      %w_gate: tensor<64x128xf32>, %w_up: tensor<64x128xf32>,
      %w_down: tensor<128x64xf32>, %final_norm: tensor<64xf32>,
      %lm_head: tensor<64x256xf32>) -> tensor<?x256xf32> {
    %c0 = arith.constant 0 : index
    %h = folio.embedding %embed[%tokens] : (tensor<256x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
    %t = tensor.dim %h, %c0 : tensor<?x64xf32>

    // Attention block.
    %x = folio.rms_norm %h, %attn_norm {epsilon = 1.0e-5 : f64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %q2 = folio.linear %x, %wq : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %k2 = folio.linear %x, %wk : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
    %v2 = folio.linear %x, %wv : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
    %q3 = tensor.expand_shape %q2 [[0], [1, 2]] output_shape [%t, 4, 16] : tensor<?x64xf32> into tensor<?x4x16xf32>
    %k3 = tensor.expand_shape %k2 [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
    %v3 = tensor.expand_shape %v2 [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
    %q = folio.rotary %q3, %positions {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
    %k = folio.rotary %k3, %positions {rotary_dim = 16 : i64} : (tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<?x2x16xf32>
    folio.kv_write %cache, %k, %v3, %slot_mapping : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>
    %o3 = folio.paged_attention %q, %cache, %block_tables, %seq_lens, %query_start_loc {scale = 0.25 : f64} : (tensor<?x4x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
    %o2 = tensor.collapse_shape %o3 [[0], [1, 2]] : tensor<?x4x16xf32> into tensor<?x64xf32>
    %o = folio.linear %o2, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %h1 = arith.addf %h, %o : tensor<?x64xf32>

    // MLP block.
    %y = folio.rms_norm %h1, %mlp_norm {epsilon = 1.0e-5 : f64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %m = folio.gated_mlp %y, %w_gate, %w_up, %w_down : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
    %h2 = arith.addf %h1, %m : tensor<?x64xf32>

    // Logits only for the rows the sampler needs.
    %last = folio.gather_rows %h2[%logits_indices] : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
    %n = folio.rms_norm %last, %final_norm {epsilon = 1.0e-5 : f64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %logits = folio.linear %n, %lm_head : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
    return %logits : tensor<?x256xf32>
  }
}
