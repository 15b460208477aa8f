// RUN: folio-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

// Tests that every verifier error of the folio types and ops is reported.

//===----------------------------------------------------------------------===//
// !folio.kv_cache
//===----------------------------------------------------------------------===//

// expected-error @+1 {{kv_cache heads must be positive}}
func.func private @heads_zero(!folio.kv_cache<heads = 0, head_dim = 64, block = 16, dtype = f16>)

// -----

// expected-error @+1 {{kv_cache head_dim must be positive}}
func.func private @head_dim_zero(!folio.kv_cache<heads = 2, head_dim = 0, block = 16, dtype = f16>)

// -----

// expected-error @+1 {{kv_cache block size must be a power of two from 1 to 256, got 24}}
func.func private @block_not_pow2(!folio.kv_cache<heads = 2, head_dim = 64, block = 24, dtype = f16>)

// -----

// expected-error @+1 {{kv_cache block size must be a power of two from 1 to 256, got 512}}
func.func private @block_too_big(!folio.kv_cache<heads = 2, head_dim = 64, block = 512, dtype = f16>)

// -----

// expected-error @+1 {{kv_cache block size must be a power of two from 1 to 256, got 0}}
func.func private @block_zero(!folio.kv_cache<heads = 2, head_dim = 64, block = 0, dtype = f16>)

// -----

// expected-error @+1 {{kv_cache dtype 'i16' is not supported; expected one of f32, f16, bf16, f8E4M3FN, f8E5M2, i8, i4, i2}}
func.func private @bad_dtype(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i16>)

// -----

// expected-error @+1 {{kv_cache dtype 'f16' is not quantized and takes no scale layout, got 'per_head'}}
func.func private @float_with_scale(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f16, scale = per_head>)

// -----

// expected-error @+1 {{kv_cache dtype 'f8E4M3FN' takes scale per_head or per_tensor, got 'kivi'}}
func.func private @fp8_kivi(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f8E4M3FN, scale = kivi>)

// -----

// expected-error @+1 {{kv_cache dtype 'f8E5M2' needs a static scale (per_head or per_tensor), never an implicit scale of 1}}
func.func private @fp8_unscaled(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f8E5M2>)

// -----

// expected-error @+1 {{kv_cache dtype 'f8E4M3FN' takes scale per_head or per_tensor, got 'per_token_head'}}
func.func private @fp8_per_token(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f8E4M3FN, scale = per_token_head>)

// -----

// expected-error @+1 {{kv_cache dtype 'i8' takes scale per_token_head, per_token_group, per_head or per_tensor, got 'none'}}
func.func private @int_without_scale(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i8>)

// -----

// expected-error @+1 {{kv_cache dtype 'i8' takes scale per_token_head, per_token_group, per_head or per_tensor, got 'kivi'}}
func.func private @i8_kivi(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i8, scale = kivi>)

// -----

// expected-error @+1 {{kv_cache dtype 'i4' takes scale per_token_group, got 'per_token_head'}}
func.func private @i4_per_token_head(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_token_head>)

// -----

// expected-error @+1 {{kv_cache dtype 'i4' takes scale per_token_group, got 'per_head'}}
func.func private @i4_per_head(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_head>)

// -----

// expected-error @+1 {{kv_cache dtype 'i2' takes scale kivi, got 'per_token_group'}}
func.func private @i2_group(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = per_token_group, group = 16>)

// -----

// expected-error @+1 {{kv_cache group (16) is only meaningful with scale 'per_token_group' or 'kivi'}}
func.func private @group_without_layout(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i8, scale = per_token_head, group = 16>)

// -----

// expected-error @+1 {{kv_cache group (8) is only meaningful with scale 'per_token_group' or 'kivi'}}
func.func private @float_with_group(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = bf16, group = 8>)

// -----

// expected-error @+1 {{kv_cache scale 'per_token_group' needs a group that divides head_dim (64), got 0}}
func.func private @group_missing(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i8, scale = per_token_group>)

// -----

// expected-error @+1 {{kv_cache scale 'per_token_group' needs a group that divides head_dim (64), got 24}}
func.func private @group_not_divisor(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_token_group, group = 24>)

// -----

// expected-error @+1 {{kv_cache i4 group must be even (two elements per byte), got 1}}
func.func private @i4_group_odd(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_token_group, group = 1>)

// -----

// expected-error @+1 {{kv_cache residual window is only meaningful with scale 'kivi'}}
func.func private @residual_without_kivi(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i8, scale = per_head, residual = 16>)

// -----

// expected-error @+1 {{kv_cache KIVI residual window (24) must be a multiple of the block size (16)}}
func.func private @residual_not_block_multiple(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 24, group = 32>)

// -----

// i4 with KIVI is refused until something runs it.
// expected-error @+1 {{kv_cache dtype 'i4' takes scale per_token_group, got 'kivi'}}
func.func private @i4_kivi(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = kivi, residual = 64, group = 32>)

// -----

// expected-error @+1 {{kv_cache dtype 'i2' takes scale kivi, got 'none'}}
func.func private @i2_unscaled(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2>)

// -----

// expected-error @+1 {{kv_cache scale 'kivi' needs a residual window (residual > 0, a multiple of the block size 16)}}
func.func private @i2_no_residual(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, group = 32>)

// -----

// expected-error @+1 {{kv_cache scale 'kivi' needs a value group that divides head_dim (64), got 0}}
func.func private @i2_no_group(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 32>)

// -----

// expected-error @+1 {{kv_cache scale 'kivi' needs a value group that divides head_dim (64), got 24}}
func.func private @i2_group_not_divisor(!folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 32, group = 24>)

// -----

// expected-error @+1 {{kv_cache i2 head_dim must be a multiple of 4 (four elements per byte), got 66}}
func.func private @i2_head_dim(!folio.kv_cache<heads = 2, head_dim = 66, block = 16, dtype = i2, scale = kivi, residual = 32, group = 2>)

//===----------------------------------------------------------------------===//
// folio.embedding
//===----------------------------------------------------------------------===//

// -----

func.func @embedding_table_rank(%t: tensor<8xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'folio.embedding' op table must be rank 2 [vocab, hidden], got rank 1}}
  %0 = folio.embedding %t[%ids] : (tensor<8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @embedding_ids_rank(%t: tensor<8x4xf32>, %ids: tensor<i32>) {
  // expected-error @+1 {{'folio.embedding' op ids must have rank >= 1}}
  %0 = folio.embedding %t[%ids] : (tensor<8x4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

func.func @embedding_result_rank(%t: tensor<8x4xf32>, %ids: tensor<2xi32>) {
  // expected-error @+1 {{'folio.embedding' op result must be rank 2 (the ids' dims, then hidden), got rank 3}}
  %0 = folio.embedding %t[%ids] : (tensor<8x4xf32>, tensor<2xi32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @embedding_tokens(%t: tensor<8x4xf32>, %ids: tensor<2xi32>) {
  // expected-error @+1 {{'folio.embedding' op result dim 0 (3) does not match ids dim 0 (2)}}
  %0 = folio.embedding %t[%ids] : (tensor<8x4xf32>, tensor<2xi32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @embedding_hidden(%t: tensor<8x4xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'folio.embedding' op result dim 1 (5) does not match table dim 1 (4)}}
  %0 = folio.embedding %t[%ids] : (tensor<8x4xf32>, tensor<?xi32>) -> tensor<?x5xf32>
  return
}

// -----

func.func @embedding_elem(%t: tensor<8x4xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'folio.embedding' op result element type must equal the table's}}
  %0 = folio.embedding %t[%ids] : (tensor<8x4xf32>, tensor<?xi32>) -> tensor<?x4xf16>
  return
}

// -----

func.func @embedding_scale(%t: tensor<8x4xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'folio.embedding' op scale must be a finite value > 0, got 0}}
  %0 = folio.embedding %t[%ids] {scale = 0.0 : f64} : (tensor<8x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<8x4xf32>, %ids: tensor<?xf32>) {
  // expected-error @+1 {{'folio.embedding' op operand #1 must be ranked tensor of signless integer values}}
  %0 = folio.embedding %t[%ids] : (tensor<8x4xf32>, tensor<?xf32>) -> tensor<?x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.linear
//===----------------------------------------------------------------------===//

// -----

func.func @linear_input_rank(%x: tensor<f32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'folio.linear' op input must have rank >= 1}}
  %0 = folio.linear %x, %w : (tensor<f32>, tensor<4x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x4xf32>, %w: tensor<4x8x1xf32>) {
  // expected-error @+1 {{'folio.linear' op weight must be rank 2 [in, out] for weight_layout in_out, got rank 3}}
  %0 = folio.linear %x, %w : (tensor<?x4xf32>, tensor<4x8x1xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_result_rank(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'folio.linear' op result rank 3 differs from the input's 2}}
  %0 = folio.linear %x, %w : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<1x?x8xf32>
  return
}

// -----

func.func @linear_k(%x: tensor<?x4xf32>, %w: tensor<5x8xf32>) {
  // expected-error @+1 {{'folio.linear' op input dim 1 (4) does not match weight dim 0 (5)}}
  %0 = folio.linear %x, %w : (tensor<?x4xf32>, tensor<5x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_k_out_in(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'folio.linear' op input dim 1 (4) does not match weight dim 1 (8)}}
  %0 = folio.linear %x, %w {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @linear_n(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'folio.linear' op result dim 1 (9) does not match weight dim 1 (8)}}
  %0 = folio.linear %x, %w : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x9xf32>
  return
}

// -----

func.func @linear_rows(%x: tensor<3x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'folio.linear' op result dim 0 (2) does not match input dim 0 (3)}}
  %0 = folio.linear %x, %w : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_elem(%x: tensor<?x4xf32>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{'folio.linear' op result element type must equal the input's}}
  %0 = folio.linear %x, %w : (tensor<?x4xf32>, tensor<4x8xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

func.func @linear_bias_rank(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'folio.linear' op bias must be rank 1 [out], got rank 2}}
  %0 = folio.linear %x, %w, %b : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_bias_dim(%x: tensor<?x4xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'folio.linear' op bias dim 0 (4) does not match weight dim 1 (8)}}
  %0 = folio.linear %x, %w, %b : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.rms_norm / folio.layer_norm
//===----------------------------------------------------------------------===//

// -----

func.func @rms_norm_input_rank(%x: tensor<f32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op input must have rank >= 1}}
  %0 = folio.rms_norm %x, %w : (tensor<f32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @rms_norm_weight_rank(%x: tensor<?x4xf32>, %w: tensor<1x4xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op weight must be rank 1 [hidden], got rank 2}}
  %0 = folio.rms_norm %x, %w : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @rms_norm_weight_dim(%x: tensor<?x4xf32>, %w: tensor<5xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op weight dim 0 (5) does not match input dim 1 (4)}}
  %0 = folio.rms_norm %x, %w : (tensor<?x4xf32>, tensor<5xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @rms_norm_result_elem(%x: tensor<?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op result element type 'f16' differs from the input's 'f32'}}
  %0 = folio.rms_norm %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf16>
  return
}

// -----

func.func @rms_norm_result_rank(%x: tensor<?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op result rank 1 differs from the input's 2}}
  %0 = folio.rms_norm %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @rms_norm_result_dim(%x: tensor<3x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op result dim 0 (2) does not match input dim 0 (3)}}
  %0 = folio.rms_norm %x, %w : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'folio.rms_norm' op epsilon must be a finite value >= 0, got -1}}
  %0 = folio.rms_norm %x, %w {epsilon = -1.0 : f64} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<?x4xf32>, %w: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'folio.layer_norm' op bias dim 0 (3) does not match input dim 1 (4)}}
  %0 = folio.layer_norm %x, %w, %b : (tensor<?x4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<?x4xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'folio.layer_norm' op weight dim 0 (8) does not match input dim 1 (4)}}
  %0 = folio.layer_norm %x, %w : (tensor<?x4xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'folio.layer_norm' op epsilon must be a finite value >= 0, got -0.5}}
  %0 = folio.layer_norm %x, %w {epsilon = -0.5 : f64} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.rotary
//===----------------------------------------------------------------------===//

// -----

func.func @rotary_input_rank(%x: tensor<?x64xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op input must be rank 3 [tokens, heads, head_dim] or rank 4 [batch, heads, seq, head_dim], got rank 2}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64} : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @rotary_positions_rank(%x: tensor<?x4x16xf32>, %p: tensor<1x?xi32>) {
  // expected-error @+1 {{'folio.rotary' op positions must be rank 1 [tokens], got rank 2}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<1x?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_positions_dim(%x: tensor<3x4x16xf32>, %p: tensor<2xi32>) {
  // expected-error @+1 {{'folio.rotary' op positions dim 0 (2) does not match input dim 0 (3)}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64} : (tensor<3x4x16xf32>, tensor<2xi32>) -> tensor<3x4x16xf32>
  return
}

// -----

func.func @rotary_batched_positions_rank(%x: tensor<1x4x?x16xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{'folio.rotary' op positions must be rank 2 [batch, seq], got rank 1}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64} : (tensor<1x4x?x16xf32>, tensor<?xi64>) -> tensor<1x4x?x16xf32>
  return
}

// -----

func.func @rotary_batched_positions_seq(%x: tensor<1x4x5x16xf32>, %p: tensor<1x6xi64>) {
  // expected-error @+1 {{'folio.rotary' op positions dim 1 (6) does not match input dim 2 (5)}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64} : (tensor<1x4x5x16xf32>, tensor<1x6xi64>) -> tensor<1x4x5x16xf32>
  return
}

// -----

func.func @rotary_result(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op result dim 1 (8) does not match input dim 1 (4)}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @rotary_odd(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op rotary_dim must be positive and even, got 7}}
  %0 = folio.rotary %x, %p {rotary_dim = 7 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_zero(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op rotary_dim must be positive and even, got 0}}
  %0 = folio.rotary %x, %p {rotary_dim = 0 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_too_wide(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op rotary_dim (32) exceeds head_dim (16)}}
  %0 = folio.rotary %x, %p {rotary_dim = 32 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_base(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op base must be a finite value > 0, got -1}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, base = -1.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_cache_rank(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>, %c: tensor<16xf32>) {
  // expected-error @+1 {{'folio.rotary' op cos_sin_cache must be rank 2 [max_position, rotary_dim], got rank 1}}
  %0 = folio.rotary %x, %p, %c {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_cache_width(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>, %c: tensor<64x8xf32>) {
  // expected-error @+1 {{'folio.rotary' op cos_sin_cache dim 1 (8) must equal rotary_dim (16)}}
  %0 = folio.rotary %x, %p, %c {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<64x8xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_cache_scaled(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>, %c: tensor<64x16xf32>) {
  // expected-error @+1 {{'folio.rotary' op cos_sin_cache already holds the scaled angles; scaling must be 'none' with it}}
  %0 = folio.rotary %x, %p, %c {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<linear>, scaling_factor = 2.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<64x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_params_without_scaling(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op scaling parameters given but scaling is 'none'}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling_factor = 2.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_factor(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op scaling_factor must be a finite value > 0, got 0}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<linear>, scaling_factor = 0.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_llama3_params_on_yarn(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op low_freq_factor/high_freq_factor are only valid with scaling 'llama3'}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<yarn>, original_max_position = 4096 : i64, low_freq_factor = 1.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_yarn_params_on_llama3(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op beta_fast/beta_slow are only valid with scaling 'yarn'}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<llama3>, original_max_position = 8192 : i64, low_freq_factor = 1.0 : f64, high_freq_factor = 4.0 : f64, beta_fast = 32.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_linear_with_max_position(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op original_max_position is not used by 'linear' scaling}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<linear>, scaling_factor = 2.0 : f64, original_max_position = 4096 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_yarn_needs_max_position(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op scaling 'yarn' needs a positive original_max_position}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<yarn>, scaling_factor = 4.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_llama3_needs_factors(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op scaling 'llama3' needs low_freq_factor and high_freq_factor}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<llama3>, scaling_factor = 8.0 : f64, original_max_position = 8192 : i64, low_freq_factor = 1.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @rotary_llama3_factor_order(%x: tensor<?x4x16xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'folio.rotary' op llama3 scaling needs 0 < low_freq_factor < high_freq_factor, got 4 and 1}}
  %0 = folio.rotary %x, %p {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<llama3>, scaling_factor = 8.0 : f64, original_max_position = 8192 : i64, low_freq_factor = 4.0 : f64, high_freq_factor = 1.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.gated_mlp
//===----------------------------------------------------------------------===//

// -----

func.func @gated_mlp_input_rank(%x: tensor<f32>, %g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op input must have rank >= 1}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @gated_mlp_weight_rank(%x: tensor<?x4xf32>, %g: tensor<4x8xf32>, %u: tensor<32xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op up_weight must be rank 2 for weight_layout in_out, got rank 1}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gated_mlp_gate_k(%x: tensor<?x4xf32>, %g: tensor<5x8xf32>, %u: tensor<5x8xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op input dim 1 (4) does not match gate_weight dim 0 (5)}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x4xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gated_mlp_up_shape(%x: tensor<?x4xf32>, %g: tensor<4x8xf32>, %u: tensor<4x6xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op up_weight dim 1 (6) does not match gate_weight dim 1 (8)}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x6xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gated_mlp_down_in(%x: tensor<?x4xf32>, %g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<6x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op down_weight dim 0 (6) does not match gate_weight dim 1 (8)}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<6x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gated_mlp_down_out(%x: tensor<?x4xf32>, %g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<8x5xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op down_weight dim 1 (5) does not match input dim 1 (4)}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gated_mlp_out_in(%x: tensor<?x4xf32>, %g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op input dim 1 (4) does not match gate_weight dim 1 (8)}}
  %0 = folio.gated_mlp %x, %g, %u, %d {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gated_mlp_result(%x: tensor<?x4xf32>, %g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{'folio.gated_mlp' op result element type 'bf16' differs from the input's 'f32'}}
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<?x4xbf16>
  return
}

//===----------------------------------------------------------------------===//
// folio.gather_rows
//===----------------------------------------------------------------------===//

// -----

func.func @gather_rows_input_rank(%h: tensor<?x2x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'folio.gather_rows' op input must be rank 2 [tokens, width], got rank 3}}
  %0 = folio.gather_rows %h[%i] : (tensor<?x2x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gather_rows_indices_rank(%h: tensor<?x4xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{'folio.gather_rows' op indices must be rank 1 [rows], got rank 0}}
  %0 = folio.gather_rows %h[%i] : (tensor<?x4xf32>, tensor<i32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @gather_rows_result_rank(%h: tensor<?x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'folio.gather_rows' op result must be rank 2 [rows, width], got rank 1}}
  %0 = folio.gather_rows %h[%i] : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<?xf32>
  return
}

// -----

func.func @gather_rows_rows(%h: tensor<?x4xf32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{'folio.gather_rows' op result dim 0 (3) does not match indices dim 0 (2)}}
  %0 = folio.gather_rows %h[%i] : (tensor<?x4xf32>, tensor<2xi32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_rows_width(%h: tensor<?x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'folio.gather_rows' op result dim 1 (8) does not match input dim 1 (4)}}
  %0 = folio.gather_rows %h[%i] : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @gather_rows_elem(%h: tensor<?x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'folio.gather_rows' op result element type must equal the input's}}
  %0 = folio.gather_rows %h[%i] : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x4xf16>
  return
}

//===----------------------------------------------------------------------===//
// folio.attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_rank(%q: tensor<8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op query must be rank 4 [batch, heads, seq, head_dim], got rank 3}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_value_rank(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op value must be rank 4 [batch, kv_heads, kv_seq, v_head_dim], got rank 3}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<1x8x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op key dim 0 (2) does not match query dim 0 (1)}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x32xf32>, %v: tensor<1x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op key dim 3 (32) does not match query dim 3 (16)}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_kv_heads(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x4x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op value dim 1 (4) does not match key dim 1 (2)}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_kv_len(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x5x16xf32>, %v: tensor<1x2x6x16xf32>) {
  // expected-error @+1 {{'folio.attention' op value dim 2 (6) does not match key dim 2 (5)}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x6x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<1x6x?x16xf32>, %k: tensor<1x4x?x16xf32>, %v: tensor<1x4x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op query heads (6) must be a multiple of the KV heads (4) for grouped-query attention}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x6x?x16xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x16xf32>) -> tensor<1x6x?x16xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x24xf32>) {
  // expected-error @+1 {{'folio.attention' op result dim 3 (16) does not match value dim 3 (24)}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x24xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_mask_rank(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>, %m: tensor<?xi64>) {
  // expected-error @+1 {{'folio.attention' op key_padding_mask must be rank 2 [batch, kv_seq], got rank 1}}
  %0 = folio.attention %q, %k, %v, %m {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<?xi64>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_mask_len(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x16xf32>, %m: tensor<1x6xi64>) {
  // expected-error @+1 {{'folio.attention' op key_padding_mask dim 1 (6) does not match key dim 2 (7)}}
  %0 = folio.attention %q, %k, %v, %m {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<1x6xi64>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op scale must be a finite value > 0, got -0.25}}
  %0 = folio.attention %q, %k, %v {scale = -0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_softcap(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op softcap must be a finite value >= 0, got -5}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64, softcap = -5.0 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_window(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op sliding_window must be >= 0 (0 = none), got -1}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64, sliding_window = -1 : i64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @attention_window_not_causal(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x?x16xf32>) {
  // expected-error @+1 {{'folio.attention' op sliding_window needs causal attention}}
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64, sliding_window = 8 : i64, causal = false} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.kv_write
//===----------------------------------------------------------------------===//

// -----

func.func @kv_write_rank(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %k: tensor<?x32xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'folio.kv_write' op key must be rank 3 [tokens, kv_heads, head_dim], got rank 2}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x32xf32>, tensor<?x2x16xf32>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_heads(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %k: tensor<?x4x16xf32>, %v: tensor<?x4x16xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'folio.kv_write' op key has 4 heads but the cache has 2}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_head_dim(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x8xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'folio.kv_write' op value head_dim (8) differs from the cache's (16)}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x2x16xf32>, tensor<?x2x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_tokens(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %k: tensor<3x2x16xf32>, %v: tensor<4x2x16xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'folio.kv_write' op value dim 0 (4) does not match key dim 0 (3)}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<3x2x16xf32>, tensor<4x2x16xf32>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_slots_rank(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<1x?xi32>) {
  // expected-error @+1 {{'folio.kv_write' op slot_mapping must be rank 1 [tokens], got rank 2}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<1x?xi32>
  return
}

// -----

func.func @kv_write_slots(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %k: tensor<3x2x16xf32>, %v: tensor<3x2x16xf32>, %s: tensor<2xi32>) {
  // expected-error @+1 {{'folio.kv_write' op slot_mapping dim 0 (2) does not match key dim 0 (3)}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<3x2x16xf32>, tensor<3x2x16xf32>, tensor<2xi32>
  return
}

// -----

func.func @kv_write_scales_missing(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>) {
  // expected-error @+1 {{'folio.kv_write' op needs scales(k_scale, v_scale) for a cache with static scale 'per_head'}}
  folio.kv_write %c, %k, %v, %s : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>
  return
}

// -----

func.func @kv_write_scales_unexpected(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = i8, scale = per_token_head>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>, %ks: tensor<2xf32>) {
  // expected-error @+1 {{'folio.kv_write' op takes no scale operands for a cache with scale 'per_token_head'; only per_head and per_tensor scales are operands}}
  folio.kv_write %c, %k, %v, %s scales(%ks, %ks) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = i8, scale = per_token_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @kv_write_scale_heads(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>, %ks: tensor<4xf32>, %vs: tensor<2xf32>) {
  // expected-error @+1 {{'folio.kv_write' op k_scale must be tensor<2xf32> (per_head), got 'tensor<4xf32>'}}
  folio.kv_write %c, %k, %v, %s scales(%ks, %vs) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @kv_write_scale_type(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>, %ks: tensor<2xf32>, %vs: tensor<2xf16>) {
  // expected-error @+1 {{'folio.kv_write' op v_scale must be tensor<2xf32> (per_head), got 'tensor<2xf16>'}}
  folio.kv_write %c, %k, %v, %s scales(%ks, %vs) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf16>
  return
}

// -----

func.func @kv_write_scale_per_tensor(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E5M2, scale = per_tensor>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>, %ks: tensor<2xf32>) {
  // expected-error @+1 {{'folio.kv_write' op k_scale must be tensor<f32> (per_tensor), got 'tensor<2xf32>'}}
  folio.kv_write %c, %k, %v, %s scales(%ks, %ks) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E5M2, scale = per_tensor>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @kv_write_one_scale(%c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %s: tensor<?xi32>, %ks: tensor<2xf32>) {
  // expected-error @+1 {{'folio.kv_write' op takes k_scale and v_scale together or neither}}
  "folio.kv_write"(%c, %k, %v, %s, %ks) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (!folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<2xf32>) -> ()
  return
}

//===----------------------------------------------------------------------===//
// folio.paged_attention
//===----------------------------------------------------------------------===//

// -----

func.func @paged_rank(%q: tensor<?x128xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op query must be rank 3 [tokens, heads, head_dim], got rank 2}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x128xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x128xf32>
  return
}

// -----

func.func @paged_head_dim(%q: tensor<?x8x32xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op query head_dim (32) differs from the cache's (16)}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x32xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x32xf32>
  return
}

// -----

func.func @paged_gqa(%q: tensor<?x3x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op query heads (3) must be a multiple of the KV heads (2) for grouped-query attention}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x3x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x3x16xf32>
  return
}

// -----

func.func @paged_block_tables(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op block_tables must be rank 2 [seqs, max_blocks], got rank 1}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_seq_lens_rank(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?x1xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op seq_lens must be rank 1 [seqs], got rank 2}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?x1xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_qsl_rank(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<i32>) {
  // expected-error @+1 {{'folio.paged_attention' op query_start_loc must be rank 1 [seqs + 1], got rank 0}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<i32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_seqs(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<3x?xi32>, %l: tensor<2xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op seq_lens dim 0 (2) does not match block_tables dim 0 (3)}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<3x?xi32>, tensor<2xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_qsl(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<2x?xi32>, %l: tensor<2xi32>, %qs: tensor<2xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op query_start_loc must have seqs + 1 = 3 entries, got 2}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<2x?xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_result(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op result dim 1 (2) does not match input dim 1 (8)}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  return
}

// -----

func.func @paged_window(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op sliding_window must be >= 0 (0 = none), got -4}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64, sliding_window = -4 : i64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_scale(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op scale must be a finite value > 0, got 0}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.0 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_not_kv_cache(%q: tensor<?x8x16xf32>, %c: tensor<?x16xf16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op operand #1 must be}}
  %0 = "folio.paged_attention"(%q, %c, %bt, %l, %qs) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, scale = 0.25 : f64} : (tensor<?x8x16xf32>, tensor<?x16xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_scales_missing(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>) {
  // expected-error @+1 {{'folio.paged_attention' op needs scales(k_scale, v_scale) for a cache with static scale 'per_head'}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_scales_unexpected(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>, %ks: tensor<2xf32>) {
  // expected-error @+1 {{'folio.paged_attention' op takes no scale operands for a cache with scale 'none'; only per_head and per_tensor scales are operands}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs scales(%ks, %ks) {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @paged_scale_shape(%q: tensor<?x8x16xf32>, %c: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, %bt: tensor<?x?xi32>, %l: tensor<?xi32>, %qs: tensor<?xi32>, %ks: tensor<2xf32>, %vs: tensor<2x1xf32>) {
  // expected-error @+1 {{'folio.paged_attention' op v_scale must be tensor<2xf32> (per_head), got 'tensor<2x1xf32>'}}
  %0 = folio.paged_attention %q, %c, %bt, %l, %qs scales(%ks, %vs) {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2xf32>, tensor<2x1xf32>) -> tensor<?x8x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.quantize / folio.dequantize
//===----------------------------------------------------------------------===//

// -----

func.func @quantize_result(%x: tensor<4x8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'folio.quantize' op result element type must be i8, i4, i2, f8E4M3FN or f8E5M2, got 'i16'}}
  %0 = folio.quantize %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi16>
  return
}

// -----

func.func @quantize_shape(%x: tensor<4x8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'folio.quantize' op result shape must equal the input's}}
  %0 = folio.quantize %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x4xi8>
  return
}

// -----

func.func @quantize_scale_rank(%x: tensor<4x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'folio.quantize' op scale must be rank 0 (per tensor) or rank 2 like the data, got rank 1}}
  %0 = folio.quantize %x, %s : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xi8>
  return
}

// -----

func.func @quantize_scale_dim(%x: tensor<4x8xf32>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{'folio.quantize' op scale dim 1 (2) must be 1 or the data's (8)}}
  %0 = folio.quantize %x, %s : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x8xi8>
  return
}

// -----

func.func @quantize_fp8_zero_point(%x: tensor<4x8xf32>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'folio.quantize' op zero_point is only valid for integer quantization, not 'f8E4M3FN'}}
  %0 = folio.quantize %x, %s, %z : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf8E4M3FN>
  return
}

// -----

func.func @quantize_zero_point_shape(%x: tensor<4x8xf32>, %s: tensor<4x1xf32>, %z: tensor<1x8xi8>) {
  // expected-error @+1 {{'folio.quantize' op zero_point shape must equal the scale's}}
  %0 = folio.quantize %x, %s, %z : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1x8xi8>) -> tensor<4x8xi4>
  return
}

// -----

func.func @dequantize_input(%x: tensor<4x8xf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'folio.dequantize' op input element type must be i8, i4, i2, f8E4M3FN or f8E5M2, got 'f16'}}
  %0 = folio.dequantize %x, %s : (tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_shape(%x: tensor<4x8xi8>, %s: tensor<f32>) {
  // expected-error @+1 {{'folio.dequantize' op result shape must equal the input's}}
  %0 = folio.dequantize %x, %s : (tensor<4x8xi8>, tensor<f32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @dequantize_scale_dim(%x: tensor<4x8xi8>, %s: tensor<3x1xf32>) {
  // expected-error @+1 {{'folio.dequantize' op scale dim 0 (3) must be 1 or the data's (4)}}
  %0 = folio.dequantize %x, %s : (tensor<4x8xi8>, tensor<3x1xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_block_scale_dim(%x: tensor<4x96xi4>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{'folio.dequantize' op scale dim 1 (2) must be 1 or the data's (96) or ceil(96 / block_size 32) = 3}}
  %0 = folio.dequantize %x, %s {block_size = 32} : (tensor<4x96xi4>, tensor<4x2xf32>) -> tensor<4x96xf32>
  return
}

// -----

func.func @dequantize_negative_block(%x: tensor<4x96xi4>, %s: tensor<4x3xf32>) {
  // expected-error @+1 {{'folio.dequantize' op block_size must be >= 0, got -32}}
  %0 = folio.dequantize %x, %s {block_size = -32} : (tensor<4x96xi4>, tensor<4x3xf32>) -> tensor<4x96xf32>
  return
}

// -----

func.func @dequantize_unblocked_scale(%x: tensor<4x96xi4>, %s: tensor<4x3xf32>) {
  // expected-error @+1 {{'folio.dequantize' op scale dim 1 (3) must be 1 or the data's (96)}}
  %0 = folio.dequantize %x, %s : (tensor<4x96xi4>, tensor<4x3xf32>) -> tensor<4x96xf32>
  return
}

// -----

func.func @dequantize_fp8_int8_activations(%x: tensor<4x8xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error @+1 {{'folio.dequantize' op int8_activations applies to integer codes, not 'f8E4M3FN'}}
  %0 = folio.dequantize %x, %s {int8_activations} : (tensor<4x8xf8E4M3FN>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_fp8_zero_point(%x: tensor<4x8xf8E5M2>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+1 {{'folio.dequantize' op zero_point is only valid for integer quantization, not 'f8E5M2'}}
  %0 = folio.dequantize %x, %s, %z : (tensor<4x8xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// folio.spec_verify
//===----------------------------------------------------------------------===//

// -----

func.func @spec_logits_rank(%l: tensor<?x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op target_logits must be rank 3 [seqs, draft_len + 1, vocab], got rank 2}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_drafts_rank(%l: tensor<?x5x256xf32>, %d: tensor<?xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_tokens must be rank 2 [seqs, draft_len], got rank 1}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_accepted_rank(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op accepted must be rank 1 [seqs], got rank 2}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?x1xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_tokens_rank(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op tokens must be rank 2 [seqs, draft_len + 1], got rank 1}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?xi32>
  return
}

// -----

func.func @spec_seqs(%l: tensor<2x5x256xf32>, %d: tensor<3x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_tokens dim 0 (3) does not match target_logits dim 0 (2)}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<2x5x256xf32>, tensor<3x4xi32> -> tensor<2xi32>, tensor<2x5xi32>
  return
}

// -----

func.func @spec_accepted_seqs(%l: tensor<2x5x256xf32>, %d: tensor<2x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op accepted dim 0 (3) does not match target_logits dim 0 (2)}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<2x5x256xf32>, tensor<2x4xi32> -> tensor<3xi32>, tensor<2x5xi32>
  return
}

// -----

func.func @spec_tokens_seqs(%l: tensor<2x5x256xf32>, %d: tensor<2x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op tokens dim 0 (1) does not match target_logits dim 0 (2)}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<2x5x256xf32>, tensor<2x4xi32> -> tensor<2xi32>, tensor<1x5xi32>
  return
}

// -----

func.func @spec_tokens_width(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op tokens dim 1 (4) does not match target_logits dim 1 (5)}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x4xi32>
  return
}

// -----

func.func @spec_rows(%l: tensor<?x4x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op target_logits needs draft_len + 1 = 5 rows per sequence, got 4}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x4x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x4xi32>
  return
}

// -----

func.func @spec_greedy_extra(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %u: tensor<?x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op greedy verification takes no draft_probs or uniforms}}
  %n, %t = folio.spec_verify <greedy> %l, %d uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_sample_missing(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %p: tensor<?x4x256xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op sample verification needs uniforms [seqs, draft_len + 1] (draft_probs are optional)}}
  %n, %t = folio.spec_verify <sample> %l, %d draft_probs(%p : tensor<?x4x256xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_uniforms_rank(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %u: tensor<?xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op uniforms must be rank 2 [seqs, draft_len + 1], got rank 1}}
  %n, %t = folio.spec_verify <sample> %l, %d uniforms(%u : tensor<?xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_uniforms_width(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %u: tensor<?x4xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op uniforms dim 1 (4) does not match target_logits dim 1 (5)}}
  %n, %t = folio.spec_verify <sample> %l, %d uniforms(%u : tensor<?x4xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_uniforms_seqs(%l: tensor<2x5x256xf32>, %d: tensor<2x4xi32>, %u: tensor<3x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op uniforms dim 0 (3) does not match target_logits dim 0 (2)}}
  %n, %t = folio.spec_verify <sample> %l, %d uniforms(%u : tensor<3x5xf32>) : tensor<2x5x256xf32>, tensor<2x4xi32> -> tensor<2xi32>, tensor<2x5xi32>
  return
}

// -----

func.func @spec_probs_rank(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %p: tensor<?x256xf32>, %u: tensor<?x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_probs must be rank 3 [seqs, draft_len, vocab], got rank 2}}
  %n, %t = folio.spec_verify <sample> %l, %d draft_probs(%p : tensor<?x256xf32>) uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_probs_seqs(%l: tensor<2x5x256xf32>, %d: tensor<2x4xi32>, %p: tensor<1x4x256xf32>, %u: tensor<2x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_probs dim 0 (1) does not match target_logits dim 0 (2)}}
  %n, %t = folio.spec_verify <sample> %l, %d draft_probs(%p : tensor<1x4x256xf32>) uniforms(%u : tensor<2x5xf32>) : tensor<2x5x256xf32>, tensor<2x4xi32> -> tensor<2xi32>, tensor<2x5xi32>
  return
}

// -----

func.func @spec_probs_len(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %p: tensor<?x5x256xf32>, %u: tensor<?x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_probs dim 1 (5) does not match draft_tokens dim 1 (4)}}
  %n, %t = folio.spec_verify <sample> %l, %d draft_probs(%p : tensor<?x5x256xf32>) uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_probs_vocab(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %p: tensor<?x4x128xf32>, %u: tensor<?x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_probs dim 2 (128) does not match target_logits dim 2 (256)}}
  %n, %t = folio.spec_verify <sample> %l, %d draft_probs(%p : tensor<?x4x128xf32>) uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

// Tests that greedy mode refuses draft probabilities too (the argmax match
// reads none).
func.func @spec_greedy_probs(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %p: tensor<?x4x256xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op greedy verification takes no draft_probs or uniforms}}
  %n, %t = folio.spec_verify <greedy> %l, %d draft_probs(%p : tensor<?x4x256xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

// Tests the element types the kernels take: f32 logits, probabilities and
// uniforms; i32 drafts, counts and tokens.
func.func @spec_logits_bf16(%l: tensor<?x5x256xbf16>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op target_logits must have 'f32' elements, got 'bf16'}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xbf16>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_drafts_i64(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi64>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_tokens must have 'i32' elements, got 'i64'}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi64> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_accepted_i64(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op accepted must have 'i32' elements, got 'i64'}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi64>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_tokens_i64(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>) {
  // expected-error @+1 {{'folio.spec_verify' op tokens must have 'i32' elements, got 'i64'}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi64>
  return
}

// -----

func.func @spec_probs_f16(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %p: tensor<?x4x256xf16>, %u: tensor<?x5xf32>) {
  // expected-error @+1 {{'folio.spec_verify' op draft_probs must have 'f32' elements, got 'f16'}}
  %n, %t = folio.spec_verify <sample> %l, %d draft_probs(%p : tensor<?x4x256xf16>) uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

// -----

func.func @spec_uniforms_f16(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>, %u: tensor<?x5xf16>) {
  // expected-error @+1 {{'folio.spec_verify' op uniforms must have 'f32' elements, got 'f16'}}
  %n, %t = folio.spec_verify <sample> %l, %d uniforms(%u : tensor<?x5xf16>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return
}

//===----------------------------------------------------------------------===//
// folio.kernel / folio.yield
//===----------------------------------------------------------------------===//

// -----

func.func @kernel_empty_name(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.kernel' op needs a non-empty name}}
  folio.kernel "" (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    folio.yield
  }
  return
}

// -----

func.func @kernel_arg_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.kernel' op body has 2 arguments for 1 inputs}}
  folio.kernel "k" (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    folio.yield
  }
  return
}

// -----

func.func @kernel_arg_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.kernel' op body argument 0 has type 'tensor<4xf16>' but input 0 has type 'tensor<4xf32>'}}
  folio.kernel "k" (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf16>):
    folio.yield
  }
  return
}

// -----

func.func @kernel_yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'folio.kernel' op yields 0 values of types () but the kernel returns ('tensor<4xf32>')}}
  %0 = folio.kernel "k" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    folio.yield
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @kernel_terminator(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.kernel' op body must end with folio.yield}}
  folio.kernel "k" (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    "test.terminator"() : () -> ()
  }
  return
}

// -----

func.func @kernel_isolated(%x: tensor<4xf32>, %w: tensor<4xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  folio.kernel "k" (%x) : (tensor<4xf32>) -> () {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %n = folio.rms_norm %a, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    folio.yield
  }
  return
}

// -----

func.func @yield_outside_kernel() {
  // expected-error @+1 {{'folio.yield' op expects parent op 'folio.kernel'}}
  folio.yield
}

//===----------------------------------------------------------------------===//
// folio.onnx_node
//===----------------------------------------------------------------------===//

// -----

func.func @onnx_node_empty_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.onnx_node' op needs a non-empty op_type}}
  %0 = folio.onnx_node ""(%x) {opset = 17 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @onnx_node_opset(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.onnx_node' op opset must be >= 1, got 0}}
  %0 = folio.onnx_node "Relu"(%x) {opset = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @onnx_node_absent_order(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.onnx_node' op absent_inputs must be increasing positions below the node's 3 inputs, got 1}}
  %0 = folio.onnx_node "Clip"(%x) {opset = 13 : i64, absent_inputs = array<i64: 2, 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @onnx_node_absent_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'folio.onnx_node' op absent_inputs must be increasing positions below the node's 2 inputs, got 5}}
  %0 = folio.onnx_node "Clip"(%x) {opset = 13 : i64, absent_inputs = array<i64: 5>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise and data movement
//===----------------------------------------------------------------------===//

// -----

func.func @binary_mixed_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{operands and result must share one element type}}
  %r = folio.binary add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_no_broadcast(%a: tensor<2x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand dims 4 and 3 (result dim 1) do not broadcast}}
  %r = folio.binary mul %a, %b : (tensor<2x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @binary_wrong_result_rank(%a: tensor<2x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result rank 1 is not the broadcast rank 2}}
  %r = folio.binary sub %a, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_wrong_result_dim(%a: tensor<2x1xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result dim 1 is 8 but the operands broadcast to 4}}
  %r = folio.binary add %a, %b : (tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @binary_bad_element(%a: tensor<4xi8>) {
  // expected-error @+1 {{element type 'i8' is not one of f32, f16, bf16, i32, i64}}
  %r = folio.binary add %a, %a : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return
}

// -----

func.func @pow_of_ints(%a: tensor<4xi64>) {
  // expected-error @+1 {{pow needs a float element type}}
  %r = folio.binary pow %a, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @binary_unknown_kind(%a: tensor<4xf32>) {
  // expected-error @+1 {{unknown binary kind 'hypot'}}
  %r = folio.binary hypot %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_shape_change(%a: tensor<4xf32>) {
  // expected-error @+1 {{result dim 0 (5) differs from the input's (4)}}
  %r = folio.unary exp %a : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @unary_rank_change(%a: tensor<4xf32>) {
  // expected-error @+1 {{must have the input's element type and rank}}
  %r = folio.unary exp %a : (tensor<4xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @cast_float_to_int(%a: tensor<4xf32>) {
  // expected-error @+1 {{casts within floats or within integers only, got 'f32' to 'i64'}}
  %r = folio.cast %a : tensor<4xf32> to tensor<4xi64>
  return
}

// -----

func.func @cast_bad_type(%a: tensor<4xi8>) {
  // expected-error @+1 {{casts between f32, f16, bf16, i32 and i64 only}}
  %r = folio.cast %a : tensor<4xi8> to tensor<4xi64>
  return
}

// -----

func.func @cast_shape_change(%a: tensor<4xi32>) {
  // expected-error @+1 {{result dim 0 (3) differs from the input's (4)}}
  %r = folio.cast %a : tensor<4xi32> to tensor<3xi64>
  return
}

// -----

func.func @cast_rank_change(%a: tensor<4xi32>) {
  // expected-error @+1 {{result rank 2 differs from the input's 1}}
  %r = folio.cast %a : tensor<4xi32> to tensor<2x2xi64>
  return
}

// -----

func.func @reshape_two_dynamic(%a: tensor<?x32xf32>) {
  // expected-error @+1 {{has more than one dynamic dim}}
  %r = folio.reshape %a : tensor<?x32xf32> to tensor<?x?x8xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{reshapes 32 elements into 24}}
  %r = folio.reshape %a : tensor<4x8xf32> to tensor<3x8xf32>
  return
}

// -----

func.func @reshape_rows(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{32 elements do not fill whole rows of 5}}
  %r = folio.reshape %a : tensor<4x8xf32> to tensor<?x5xf32>
  return
}

// -----

func.func @reshape_dynamic_to_static(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{a dynamic input cannot reshape to the static}}
  %r = folio.reshape %a : tensor<?x8xf32> to tensor<2x8xf32>
  return
}

// -----

func.func @reshape_element_type(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from the input's 'f32'}}
  %r = folio.reshape %a : tensor<?x8xf32> to tensor<?x8xf16>
  return
}

// -----

func.func @transpose_not_permutation(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{permutation is not a permutation of 0..1}}
  %r = folio.transpose %a [0, 0] : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_rank(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{permutation of 3 entries for an input of rank 2}}
  %r = folio.transpose %a [0, 1, 2] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_dims(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{result dim 0 (2) is not input dim 1 (3)}}
  %r = folio.transpose %a [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_element_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{result element type 'f16' differs from the input's 'f32'}}
  %r = folio.transpose %a [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf16>
  return
}

// -----

func.func @slice_token_dim(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{slices dim 0, which is dynamic (the token dim)}}
  %r = folio.slice %a {axis = 0 : i64, start = 0 : i64, size = 1 : i64} : (tensor<?x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

func.func @slice_out_of_range(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{range [6, 10) is outside dim 1 of size 8}}
  %r = folio.slice %a {axis = 1 : i64, start = 6 : i64, size = 4 : i64} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @slice_bad_axis(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = folio.slice %a {axis = 2 : i64, start = 0 : i64, size = 4 : i64} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @slice_result_dim(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{result dim 1 is 3, expected 4}}
  %r = folio.slice %a {axis = 1 : i64, start = 0 : i64, size = 4 : i64} : (tensor<?x8xf32>) -> tensor<?x3xf32>
  return
}

// -----

func.func @slice_rank(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{must have the input's element type and rank}}
  %r = folio.slice %a {axis = 1 : i64, start = 0 : i64, size = 4 : i64} : (tensor<?x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @concat_sum(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{result dim 1 is 9 but the inputs add up to 8}}
  %r = folio.concat %a, %a {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x9xf32>
  return
}

// -----

func.func @concat_token_axis(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{input 0 is dynamic along axis 0 (the token dim)}}
  %r = folio.concat %a, %a {axis = 0 : i64} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{input 1 dim 0 (3) differs from the result's (2)}}
  %r = folio.concat %a, %b {axis = 1 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_axis_range(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %r = folio.concat %a {axis = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{needs at least one input}}
  %r = folio.concat {axis = 0 : i64} : () -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_element_type(%a: tensor<2x4xf32>, %b: tensor<2x4xf16>) {
  // expected-error @+1 {{must have the result's element type and rank}}
  %r = folio.concat %a, %b {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf16>) -> tensor<2x8xf32>
  return
}
