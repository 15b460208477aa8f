// RUN: folio-opt %s | folio-opt | FileCheck %s
// RUN: folio-opt %s --mlir-print-op-generic | folio-opt | FileCheck %s
// RUN: folio-opt %s --emit-bytecode | folio-opt | FileCheck %s

// Tests that every folio op and type survives printing and re-parsing in the
// custom form, the generic form and bytecode.

// CHECK-LABEL: func @kv_cache_types
// CHECK-SAME: !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f16>
// CHECK-SAME: !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = bf16>
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 64, block = 1, dtype = f32>
// CHECK-SAME: !folio.kv_cache<heads = 8, head_dim = 128, block = 256, dtype = f8E4M3FN, scale = per_head>
// CHECK-SAME: !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f8E5M2, scale = per_tensor>
// CHECK-SAME: !folio.kv_cache<heads = 4, head_dim = 64, block = 32, dtype = i8, scale = per_token_head>
// CHECK-SAME: !folio.kv_cache<heads = 4, head_dim = 64, block = 32, dtype = i8, scale = per_head>
// CHECK-SAME: !folio.kv_cache<heads = 4, head_dim = 64, block = 32, dtype = i8, scale = per_token_group, group = 16>
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_token_group, group = 32>
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 128, group = 32>
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 4, block = 1, dtype = i2, scale = kivi, residual = 1, group = 1>
func.func @kv_cache_types(
    %a: !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f16>,
    %b: !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = bf16>,
    %c: !folio.kv_cache<heads = 1, head_dim = 64, block = 1, dtype = f32>,
    %d: !folio.kv_cache<heads = 8, head_dim = 128, block = 256, dtype = f8E4M3FN, scale = per_head>,
    %e: !folio.kv_cache<heads = 8, head_dim = 128, block = 16, dtype = f8E5M2, scale = per_tensor>,
    %f: !folio.kv_cache<heads = 4, head_dim = 64, block = 32, dtype = i8, scale = per_token_head>,
    %g: !folio.kv_cache<heads = 4, head_dim = 64, block = 32, dtype = i8, scale = per_head>,
    %g2: !folio.kv_cache<heads = 4, head_dim = 64, block = 32, dtype = i8, scale = per_token_group, group = 16>,
    %h2: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_token_group, group = 32>,
    %i: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 128, group = 32>,
    %i2: !folio.kv_cache<heads = 1, head_dim = 4, block = 1, dtype = i2, scale = kivi, residual = 1, group = 1>) {
  return
}

// CHECK-LABEL: func @embedding
func.func @embedding(%table: tensor<256x64xf32>, %ids: tensor<?xi32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: folio.embedding %{{.*}}[%{{.*}}] : (tensor<256x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  %0 = folio.embedding %table[%ids] : (tensor<256x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  // CHECK: folio.embedding %{{.*}}[%{{.*}}] {scale = 8.000000e+00 : f64}
  %1 = folio.embedding %table[%ids] {scale = 8.0 : f64} : (tensor<256x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func @embedding_batched
func.func @embedding_batched(%table: tensor<256x64xf32>, %ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  // CHECK: folio.embedding %{{.*}}[%{{.*}}] : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
  %0 = folio.embedding %table[%ids] : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @linear
func.func @linear(%x: tensor<?x64xf32>, %w: tensor<64x192xf32>,
                  %b: tensor<192xf32>, %wt: tensor<128x64xbf16>,
                  %x3: tensor<2x?x64xf32>)
    -> (tensor<?x192xf32>, tensor<?x128xf32>, tensor<2x?x192xf32>) {
  // CHECK: folio.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<?x192xf32>
  %0 = folio.linear %x, %w, %b : (tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<?x192xf32>
  // CHECK: folio.linear %{{.*}}, %{{.*}} {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x64xf32>, tensor<128x64xbf16>) -> tensor<?x128xf32>
  %1 = folio.linear %x, %wt {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x64xf32>, tensor<128x64xbf16>) -> tensor<?x128xf32>
  // CHECK: folio.linear %{{.*}}, %{{.*}} : (tensor<2x?x64xf32>, tensor<64x192xf32>) -> tensor<2x?x192xf32>
  %2 = folio.linear %x3, %w : (tensor<2x?x64xf32>, tensor<64x192xf32>) -> tensor<2x?x192xf32>
  return %0, %1, %2 : tensor<?x192xf32>, tensor<?x128xf32>, tensor<2x?x192xf32>
}

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: folio.rms_norm %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %0 = folio.rms_norm %x, %w : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: folio.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64, weight_offset = 1.000000e+00 : f64}
  %1 = folio.rms_norm %x, %w {epsilon = 1.0e-6 : f64, weight_offset = 1.0 : f64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: folio.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %2 = folio.layer_norm %x, %w, %b : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: folio.layer_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999999999995E-7 : f64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %3 = folio.layer_norm %x, %w {epsilon = 1.0e-6 : f64} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %0, %1, %2, %3 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func @rotary
func.func @rotary(%q: tensor<?x4x16xf32>, %pos: tensor<?xi32>,
                  %cs: tensor<128x8xf32>)
    -> (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>,
        tensor<?x4x16xf32>, tensor<?x4x16xf32>) {
  // CHECK: folio.rotary %{{.*}}, %{{.*}} {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %0 = folio.rotary %q, %pos {rotary_dim = 16 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  // CHECK: folio.rotary %{{.*}}, %{{.*}} {base = 1.000000e+06 : f64, rotary_dim = 8 : i64, style = #folio.rope_style<interleaved>}
  %1 = folio.rotary %q, %pos {rotary_dim = 8 : i64, style = #folio.rope_style<interleaved>, base = 1.0e6 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  // CHECK: folio.rotary %{{.*}}, %{{.*}}, %{{.*}} {rotary_dim = 8 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<128x8xf32>) -> tensor<?x4x16xf32>
  %2 = folio.rotary %q, %pos, %cs {rotary_dim = 8 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<128x8xf32>) -> tensor<?x4x16xf32>
  // CHECK: folio.rotary %{{.*}}, %{{.*}} {high_freq_factor = 4.000000e+00 : f64, low_freq_factor = 1.000000e+00 : f64, original_max_position = 8192 : i64, rotary_dim = 16 : i64, scaling = #folio.rope_scaling<llama3>, scaling_factor = 8.000000e+00 : f64}
  %3 = folio.rotary %q, %pos {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<llama3>, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64, high_freq_factor = 4.0 : f64, original_max_position = 8192 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  // CHECK: folio.rotary %{{.*}}, %{{.*}} {beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64, original_max_position = 4096 : i64, rotary_dim = 16 : i64, scaling = #folio.rope_scaling<yarn>, scaling_factor = 4.000000e+00 : f64}
  %4 = folio.rotary %q, %pos {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<yarn>, scaling_factor = 4.0 : f64, original_max_position = 4096 : i64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %0, %1, %2, %3, %4 : tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>
}

// CHECK-LABEL: func @rotary_batched
func.func @rotary_batched(%q: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>) -> tensor<?x4x?x16xf32> {
  // CHECK: folio.rotary %{{.*}}, %{{.*}} {rotary_dim = 8 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %0 = folio.rotary %q, %pos {rotary_dim = 8 : i64} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  return %0 : tensor<?x4x?x16xf32>
}

// CHECK-LABEL: func @rotary_linear_scaling
func.func @rotary_linear_scaling(%q: tensor<3x4x16xf16>, %pos: tensor<3xi64>) -> tensor<3x4x16xf16> {
  // CHECK: scaling = #folio.rope_scaling<linear>, scaling_factor = 2.000000e+00 : f64
  %0 = folio.rotary %q, %pos {rotary_dim = 16 : i64, scaling = #folio.rope_scaling<linear>, scaling_factor = 2.0 : f64} : (tensor<3x4x16xf16>, tensor<3xi64>) -> tensor<3x4x16xf16>
  return %0 : tensor<3x4x16xf16>
}

// CHECK-LABEL: func @gated_mlp
func.func @gated_mlp(%x: tensor<?x64xf32>, %g: tensor<64x128xf32>,
                     %u: tensor<64x128xf32>, %d: tensor<128x64xf32>,
                     %gt: tensor<128x64xbf16>, %ut: tensor<128x64xbf16>,
                     %dt: tensor<64x128xbf16>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: folio.gated_mlp %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  %0 = folio.gated_mlp %x, %g, %u, %d : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  // CHECK: folio.gated_mlp {{.*}} {activation = #folio.activation<gelu_tanh>, weight_layout = #folio.weight_layout<out_in>}
  %1 = folio.gated_mlp %x, %gt, %ut, %dt {activation = #folio.activation<gelu_tanh>, weight_layout = #folio.weight_layout<out_in>} : (tensor<?x64xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<?x64xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func @gather_rows
func.func @gather_rows(%h: tensor<?x64xf32>, %idx: tensor<?xi32>) -> tensor<?x64xf32> {
  // CHECK: folio.gather_rows %{{.*}}[%{{.*}}] : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  %0 = folio.gather_rows %h[%idx] : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<1x8x?x16xf32>, %k: tensor<1x2x?x16xf32>,
                     %v: tensor<1x2x?x16xf32>, %m: tensor<1x?xi64>)
    -> (tensor<1x8x?x16xf32>, tensor<1x8x?x16xf32>) {
  // CHECK: folio.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  %0 = folio.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x8x?x16xf32>
  // CHECK: folio.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64, sliding_window = 8 : i64, softcap = 5.000000e+01 : f64}
  %1 = folio.attention %q, %k, %v, %m {scale = 0.25 : f64, sliding_window = 8 : i64, softcap = 50.0 : f64} : (tensor<1x8x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x?xi64>) -> tensor<1x8x?x16xf32>
  return %0, %1 : tensor<1x8x?x16xf32>, tensor<1x8x?x16xf32>
}

// CHECK-LABEL: func @attention_not_causal
func.func @attention_not_causal(%q: tensor<2x4x5x8xf32>, %k: tensor<2x4x5x8xf32>, %v: tensor<2x4x5x12xf32>) -> tensor<2x4x5x12xf32> {
  // CHECK: folio.attention {{.*}} {causal = false, scale = 1.250000e-01 : f64}
  %0 = folio.attention %q, %k, %v {causal = false, scale = 0.125 : f64} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x12xf32>) -> tensor<2x4x5x12xf32>
  return %0 : tensor<2x4x5x12xf32>
}

// CHECK-LABEL: func @paged_kv
func.func @paged_kv(%cache: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>,
                    %q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>,
                    %v: tensor<?x2x16xf32>, %slots: tensor<?xi32>,
                    %bt: tensor<?x?xi32>, %lens: tensor<?xi32>,
                    %qsl: tensor<?xi32>) -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  // CHECK: folio.kv_write %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>
  folio.kv_write %cache, %k, %v, %slots : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>
  // CHECK: folio.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  %0 = folio.paged_attention %q, %cache, %bt, %lens, %qsl {scale = 0.25 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  // CHECK: folio.paged_attention {{.*}} {scale = 2.500000e-01 : f64, sliding_window = 4096 : i64, softcap = 3.000000e+01 : f64}
  %1 = folio.paged_attention %q, %cache, %bt, %lens, %qsl {scale = 0.25 : f64, sliding_window = 4096 : i64, softcap = 30.0 : f64} : (tensor<?x8x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x16xf32>
  return %0, %1 : tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// CHECK-LABEL: func @paged_kv_quantized
func.func @paged_kv_quantized(%cache: !folio.kv_cache<heads = 2, head_dim = 16, block = 8, dtype = i8, scale = per_token_head>,
                              %k: tensor<3x2x16xf32>, %v: tensor<3x2x16xf32>, %slots: tensor<3xi64>,
                              %q: tensor<3x2x16xf32>, %bt: tensor<2x4xi32>,
                              %lens: tensor<2xi32>, %qsl: tensor<3xi32>) -> tensor<3x2x16xf32> {
  // CHECK: folio.kv_write {{.*}} : !folio.kv_cache<heads = 2, head_dim = 16, block = 8, dtype = i8, scale = per_token_head>, tensor<3x2x16xf32>, tensor<3x2x16xf32>, tensor<3xi64>
  folio.kv_write %cache, %k, %v, %slots : !folio.kv_cache<heads = 2, head_dim = 16, block = 8, dtype = i8, scale = per_token_head>, tensor<3x2x16xf32>, tensor<3x2x16xf32>, tensor<3xi64>
  // CHECK: folio.paged_attention {{.*}} {scale = 2.500000e-01 : f64} : (tensor<3x2x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 8, dtype = i8, scale = per_token_head>
  %0 = folio.paged_attention %q, %cache, %bt, %lens, %qsl {causal = true, scale = 0.25 : f64} : (tensor<3x2x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 8, dtype = i8, scale = per_token_head>, tensor<2x4xi32>, tensor<2xi32>, tensor<3xi32>) -> tensor<3x2x16xf32>
  return %0 : tensor<3x2x16xf32>
}

// CHECK-LABEL: func @paged_kv_static_scales
func.func @paged_kv_static_scales(%cache: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>,
                                  %tensor_cache: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E5M2, scale = per_tensor>,
                                  %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi64>,
                                  %q: tensor<?x4x16xf32>, %bt: tensor<?x?xi32>,
                                  %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                                  %ks: tensor<2xf32>, %vs: tensor<2xf32>, %s: tensor<f32>) -> (tensor<?x4x16xf32>, tensor<?x4x16xf32>) {
  // CHECK: folio.kv_write %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scales(%[[KS:[^,]*]], %[[VS:[^)]*]]) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi64>, tensor<2xf32>, tensor<2xf32>
  folio.kv_write %cache, %k, %v, %slots scales(%ks, %vs) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi64>, tensor<2xf32>, tensor<2xf32>
  // CHECK: folio.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scales(%[[KS]], %[[VS]]) {scale = 2.500000e-01 : f64} : (tensor<?x4x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<?x4x16xf32>
  %0 = folio.paged_attention %q, %cache, %bt, %lens, %qsl scales(%ks, %vs) {scale = 0.25 : f64} : (tensor<?x4x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<?x4x16xf32>
  // CHECK: folio.kv_write {{.*}} scales(%{{.*}}, %{{.*}}) : {{.*}}dtype = f8E5M2, scale = per_tensor>, {{.*}}, tensor<f32>, tensor<f32>
  folio.kv_write %tensor_cache, %k, %v, %slots scales(%s, %s) : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E5M2, scale = per_tensor>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi64>, tensor<f32>, tensor<f32>
  // CHECK: folio.paged_attention {{.*}} scales(%{{.*}}, %{{.*}}) {scale = 2.500000e-01 : f64} : ({{.*}}, tensor<f32>, tensor<f32>) -> tensor<?x4x16xf32>
  %1 = folio.paged_attention %q, %tensor_cache, %bt, %lens, %qsl scales(%s, %s) {scale = 0.25 : f64} : (tensor<?x4x16xf32>, !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = f8E5M2, scale = per_tensor>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<f32>, tensor<f32>) -> tensor<?x4x16xf32>
  return %0, %1 : tensor<?x4x16xf32>, tensor<?x4x16xf32>
}

// CHECK-LABEL: func @quantization
func.func @quantization(%x: tensor<?x8x64xf32>, %s: tensor<?x8x1xf32>,
                        %s0: tensor<f32>, %zp: tensor<1x8x64xi8>,
                        %sc: tensor<1x8x64xf32>)
    -> (tensor<?x8x64xf32>, tensor<?x8x64xf32>, tensor<?x8x64xi4>) {
  // CHECK: folio.quantize %{{.*}}, %{{.*}} : (tensor<?x8x64xf32>, tensor<?x8x1xf32>) -> tensor<?x8x64xi8>
  %0 = folio.quantize %x, %s : (tensor<?x8x64xf32>, tensor<?x8x1xf32>) -> tensor<?x8x64xi8>
  // CHECK: folio.dequantize %{{.*}}, %{{.*}} : (tensor<?x8x64xi8>, tensor<?x8x1xf32>) -> tensor<?x8x64xf32>
  %1 = folio.dequantize %0, %s : (tensor<?x8x64xi8>, tensor<?x8x1xf32>) -> tensor<?x8x64xf32>
  // CHECK: folio.quantize %{{.*}}, %{{.*}} : (tensor<?x8x64xf32>, tensor<f32>) -> tensor<?x8x64xf8E4M3FN>
  %2 = folio.quantize %x, %s0 : (tensor<?x8x64xf32>, tensor<f32>) -> tensor<?x8x64xf8E4M3FN>
  // CHECK: folio.dequantize %{{.*}}, %{{.*}} : (tensor<?x8x64xf8E4M3FN>, tensor<f32>) -> tensor<?x8x64xf32>
  %3 = folio.dequantize %2, %s0 : (tensor<?x8x64xf8E4M3FN>, tensor<f32>) -> tensor<?x8x64xf32>
  // CHECK: folio.quantize %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x8x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xi8>) -> tensor<?x8x64xi4>
  %4 = folio.quantize %x, %sc, %zp : (tensor<?x8x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xi8>) -> tensor<?x8x64xi4>
  return %1, %3, %4 : tensor<?x8x64xf32>, tensor<?x8x64xf32>, tensor<?x8x64xi4>
}

// Blocked scales: int4 weight groups of 32 along K (the last one short).
// CHECK-LABEL: func @blocked_dequantize
func.func @blocked_dequantize(%q: tensor<64x80xi4>, %s: tensor<64x3xf32>,
                              %z: tensor<64x3xi4>) -> tensor<64x80xf32> {
  // CHECK: folio.dequantize %{{.*}}, %{{.*}}, %{{.*}} {block_size = 32 : i64} : (tensor<64x80xi4>, tensor<64x3xf32>, tensor<64x3xi4>) -> tensor<64x80xf32>
  %0 = folio.dequantize %q, %s, %z {block_size = 32}
      : (tensor<64x80xi4>, tensor<64x3xf32>, tensor<64x3xi4>) -> tensor<64x80xf32>
  return %0 : tensor<64x80xf32>
}

// CHECK-LABEL: func @dequantize_int8_activations
func.func @dequantize_int8_activations(%q: tensor<64x80xi4>,
                                       %s: tensor<64x3xf32>) -> tensor<64x80xf32> {
  // CHECK: folio.dequantize %{{.*}}, %{{.*}} {block_size = 32 : i64, int8_activations} : (tensor<64x80xi4>, tensor<64x3xf32>) -> tensor<64x80xf32>
  %0 = folio.dequantize %q, %s {block_size = 32, int8_activations}
      : (tensor<64x80xi4>, tensor<64x3xf32>) -> tensor<64x80xf32>
  return %0 : tensor<64x80xf32>
}

// CHECK-LABEL: func @spec_verify
func.func @spec_verify(%logits: tensor<?x5x256xf32>, %drafts: tensor<?x4xi32>,
                       %probs: tensor<?x4x256xf32>, %u: tensor<?x5xf32>)
    -> (tensor<?xi32>, tensor<?x5xi32>, tensor<?xi32>, tensor<?x5xi32>,
        tensor<?xi32>, tensor<?x5xi32>) {
  // CHECK: folio.spec_verify <greedy> %{{.*}}, %{{.*}} : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  %n0, %t0 = folio.spec_verify <greedy> %logits, %drafts : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  // CHECK: folio.spec_verify <sample> %{{.*}}, %{{.*}} draft_probs(%{{.*}} : tensor<?x4x256xf32>) uniforms(%{{.*}} : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  %n1, %t1 = folio.spec_verify <sample> %logits, %drafts draft_probs(%probs : tensor<?x4x256xf32>) uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  // CHECK: folio.spec_verify <sample> %{{.*}}, %{{.*}} uniforms(%{{.*}} : tensor<?x5xf32>) :
  %n2, %t2 = folio.spec_verify <sample> %logits, %drafts uniforms(%u : tensor<?x5xf32>) : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return %n0, %t0, %n1, %t1, %n2, %t2 : tensor<?xi32>, tensor<?x5xi32>, tensor<?xi32>, tensor<?x5xi32>, tensor<?xi32>, tensor<?x5xi32>
}

// CHECK-LABEL: func @kernel
func.func @kernel(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %g: tensor<64xf32>,
                  %cache: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>,
                  %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<?x64xf32> {
  // CHECK: %[[R:.*]] = folio.kernel "rms_norm_linear"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<64x64xf32>, %[[C:.*]]: tensor<64xf32>):
  // CHECK: folio.rms_norm %[[A]], %[[C]]
  // CHECK: folio.yield %{{.*}} : tensor<?x64xf32>
  %0 = folio.kernel "rms_norm_linear" (%x, %w, %g) : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64xf32>):
    %n = folio.rms_norm %a, %c : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %r = folio.linear %n, %b : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    folio.yield %r : tensor<?x64xf32>
  }
  // CHECK: folio.kernel "kv_store"(%{{.*}}, %{{.*}}, %{{.*}}) : (!folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>, tensor<?x2x16xf32>, tensor<?xi32>) -> () {
  // CHECK: folio.yield{{$}}
  folio.kernel "kv_store" (%cache, %k, %slots) : (!folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>, tensor<?x2x16xf32>, tensor<?xi32>) -> () {
  ^bb0(%c0: !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>, %k0: tensor<?x2x16xf32>, %s0: tensor<?xi32>):
    folio.kv_write %c0, %k0, %k0, %s0 : !folio.kv_cache<heads = 2, head_dim = 16, block = 16, dtype = bf16>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>
    folio.yield
  }
  return %0 : tensor<?x64xf32>
}

// CHECK-LABEL: func @onnx_node
func.func @onnx_node(%x: tensor<?x8xf32>, %s: tensor<1xi64>, %e: tensor<1xi64>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: folio.onnx_node "Softmax"(%{{.*}}) {node_name = "/model/softmax", onnx_attributes = {axis = -1 : i64}, opset = 17 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %0 = folio.onnx_node "Softmax"(%x) {node_name = "/model/softmax", onnx_attributes = {axis = -1 : i64}, opset = 17 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  // CHECK: folio.onnx_node "Slice"(%{{.*}}, %{{.*}}, %{{.*}}) {absent_inputs = array<i64: 3, 4>, opset = 13 : i64}
  %1 = folio.onnx_node "Slice"(%x, %s, %e) {absent_inputs = array<i64: 3, 4>, opset = 13 : i64} : (tensor<?x8xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x8xf32>
  // CHECK: folio.onnx_node "SimplifiedLayerNormalization"(%{{.*}}) {domain = "com.microsoft", opset = 1 : i64}
  %2 = folio.onnx_node "SimplifiedLayerNormalization"(%x) {domain = "com.microsoft", opset = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// CHECK-LABEL: func @elementwise_and_data_movement
// CHECK: folio.binary add %{{.*}}, %{{.*}} : (tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
// CHECK: folio.binary pow %{{.*}}, %{{.*}} : (tensor<1x?x32xf32>, tensor<f32>) -> tensor<1x?x32xf32>
// CHECK: folio.unary tanh %{{.*}} : (tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
// CHECK: folio.cast %{{.*}} : tensor<?xi32> to tensor<?xi64>
// CHECK: folio.reshape %{{.*}} : tensor<1x?x32xf32> to tensor<?x4x8xf32>
// CHECK: folio.transpose %{{.*}} [1, 0, 2] : (tensor<?x4x8xf32>) -> tensor<4x?x8xf32>
// CHECK: folio.slice %{{.*}} {axis = 2 : i64, size = 4 : i64, start = 2 : i64} : (tensor<?x4x8xf32>) -> tensor<?x4x4xf32>
// CHECK: folio.concat %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xf32>
func.func @elementwise_and_data_movement(%x: tensor<1x?x32xf32>, %c: tensor<f32>,
                                         %ids: tensor<?xi32>)
    -> (tensor<1x?x32xf32>, tensor<?xi64>, tensor<4x?x8xf32>, tensor<?x4x8xf32>) {
  %a = folio.binary add %x, %x : (tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %p = folio.binary pow %a, %c : (tensor<1x?x32xf32>, tensor<f32>) -> tensor<1x?x32xf32>
  %t = folio.unary tanh %p : (tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %i = folio.cast %ids : tensor<?xi32> to tensor<?xi64>
  %r = folio.reshape %t : tensor<1x?x32xf32> to tensor<?x4x8xf32>
  %tr = folio.transpose %r [1, 0, 2] : (tensor<?x4x8xf32>) -> tensor<4x?x8xf32>
  %s = folio.slice %r {axis = 2 : i64, start = 2 : i64, size = 4 : i64} : (tensor<?x4x8xf32>) -> tensor<?x4x4xf32>
  %cc = folio.concat %s, %s {axis = 2 : i64} : (tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xf32>
  return %t, %i, %tr, %cc : tensor<1x?x32xf32>, tensor<?xi64>, tensor<4x?x8xf32>, tensor<?x4x8xf32>
}
