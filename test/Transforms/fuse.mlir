// RUN: folio-opt %s --split-input-file --folio-fuse | FileCheck %s

// Tests the fusion policy on one decoder layer: the residual add joins the
// norm that reads it (both results leave the kernel), the keys' rotary
// joins the cache write, paged attention and the gated MLP stay alone, and
// views are cloned into the kernels that read them.

// CHECK-LABEL: func @layer
// CHECK: %[[QKV:.*]] = folio.kernel "linear"(%arg0, %{{.*}})
// CHECK: %[[Q:.*]] = folio.kernel "rotary"(%[[QKV]], %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: folio.slice
// CHECK-NEXT: folio.reshape
// CHECK-NEXT: folio.rotary
// CHECK: folio.kernel "rotary_kv_write"(%[[QKV]], %arg1, %arg2, %arg3)
// CHECK: folio.rotary
// CHECK-NEXT: folio.kv_write
// CHECK: %[[A:.*]] = folio.kernel "paged_attention"(%[[Q]], %arg2
// CHECK: %[[R:.*]]:2 = folio.kernel "add_rms_norm"(%arg0, %[[A]], %{{.*}})
// CHECK: folio.binary add
// CHECK-NEXT: folio.rms_norm
// CHECK-NEXT: folio.yield
// CHECK: %[[M:.*]] = folio.kernel "gated_mlp"(%[[R]]#1
// CHECK: folio.kernel "elementwise"(%[[R]]#0, %[[M]])
// CHECK-NOT: folio.reshape
// CHECK: return
func.func @layer(%x: tensor<?x32xf32>, %pos: tensor<?xi64>,
                 %cache: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>,
                 %slots: tensor<?xi64>, %tables: tensor<?x?xi32>,
                 %lens: tensor<?xi32>, %starts: tensor<?xi32>) -> tensor<?x32xf32> {
  %wqkv = arith.constant dense<0.1> : tensor<32x64xf32>
  %g = arith.constant dense<1.0> : tensor<32xf32>
  %wg = arith.constant dense<0.1> : tensor<32x16xf32>
  %wd = arith.constant dense<0.1> : tensor<16x32xf32>
  %qkv = folio.linear %x, %wqkv : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  %q0 = folio.slice %qkv {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<?x64xf32>) -> tensor<?x32xf32>
  %k0 = folio.slice %qkv {axis = 1 : i64, start = 32 : i64, size = 16 : i64} : (tensor<?x64xf32>) -> tensor<?x16xf32>
  %v0 = folio.slice %qkv {axis = 1 : i64, start = 48 : i64, size = 16 : i64} : (tensor<?x64xf32>) -> tensor<?x16xf32>
  %q1 = folio.reshape %q0 : tensor<?x32xf32> to tensor<?x4x8xf32>
  %k1 = folio.reshape %k0 : tensor<?x16xf32> to tensor<?x2x8xf32>
  %v1 = folio.reshape %v0 : tensor<?x16xf32> to tensor<?x2x8xf32>
  %q = folio.rotary %q1, %pos {rotary_dim = 8 : i64} : (tensor<?x4x8xf32>, tensor<?xi64>) -> tensor<?x4x8xf32>
  %k = folio.rotary %k1, %pos {rotary_dim = 8 : i64} : (tensor<?x2x8xf32>, tensor<?xi64>) -> tensor<?x2x8xf32>
  folio.kv_write %cache, %k, %v1, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
  %a = folio.paged_attention %q, %cache, %tables, %lens, %starts {scale = 0.35 : f64} : (tensor<?x4x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
  %a1 = folio.reshape %a : tensor<?x4x8xf32> to tensor<?x32xf32>
  %h = folio.binary add %x, %a1 : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %n = folio.rms_norm %h, %g {epsilon = 1.0e-6 : f64} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %m = folio.gated_mlp %n, %wg, %wg, %wd : (tensor<?x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32>
  %out = folio.binary add %h, %m : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  return %out : tensor<?x32xf32>
}

// -----

// Tests that a linear takes the pointwise chain after it (a written-out
// GELU reads the linear's output three times) and that the logits gather
// takes the final norm, the lm_head and a soft-cap.

// CHECK-LABEL: func @epilogues
// CHECK: %[[F:.*]] = folio.kernel "linear_epilogue"
// CHECK: folio.linear
// CHECK-NEXT: folio.binary mul
// CHECK-NEXT: folio.binary pow
// CHECK-NEXT: folio.binary add
// CHECK-NEXT: folio.unary tanh
// CHECK-NEXT: folio.binary mul
// CHECK-NEXT: folio.yield
// CHECK: folio.kernel "gather_rows_linear"(%[[F]], %arg1
// CHECK: folio.gather_rows
// CHECK-NEXT: folio.rms_norm
// CHECK-NEXT: folio.linear
// CHECK-NEXT: folio.binary div
// CHECK-NEXT: folio.unary tanh
// CHECK-NEXT: folio.binary mul
// CHECK-NEXT: folio.yield
func.func @epilogues(%x: tensor<?x8xf32>, %idx: tensor<?xi32>) -> tensor<?x16xf32> {
  %w = arith.constant dense<0.1> : tensor<8x8xf32>
  %wh = arith.constant dense<0.1> : tensor<8x16xf32>
  %g = arith.constant dense<1.0> : tensor<8xf32>
  %c = arith.constant dense<3.0> : tensor<f32>
  %l = folio.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %h = folio.binary mul %l, %c : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %p = folio.binary pow %l, %c : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %s = folio.binary add %l, %p : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %t = folio.unary tanh %s : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %f = folio.binary mul %h, %t : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = folio.gather_rows %f[%idx] : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %n = folio.rms_norm %r, %g {epsilon = 1.0e-6 : f64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %o = folio.linear %n, %wh : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %d = folio.binary div %o, %c : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %e = folio.unary tanh %d : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %m = folio.binary mul %e, %c : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  return %m : tensor<?x16xf32>
}

// -----

// Tests that a pointwise op reading a value that is not the chain's (the
// residual from outside) stays out of the linear's kernel, and that a view
// read only by the return becomes a kernel of its own.

// CHECK-LABEL: func @apart
// CHECK: %[[L:.*]] = folio.kernel "linear"
// CHECK: %[[S:.*]] = folio.kernel "elementwise"(%[[L]], %arg1)
// CHECK: %[[V:.*]] = folio.kernel "reshape"(%[[S]])
// CHECK: return %[[V]]
func.func @apart(%x: tensor<?x8xf32>, %res: tensor<?x8xf32>) -> tensor<?x2x4xf32> {
  %w = arith.constant dense<0.1> : tensor<8x8xf32>
  %l = folio.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %s = folio.binary add %l, %res : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %v = folio.reshape %s : tensor<?x8xf32> to tensor<?x2x4xf32>
  return %v : tensor<?x2x4xf32>
}

// -----

// Tests that a group whose write reads a value made after its first op is
// placed after its last op (the key's view between them is cloned in and
// is no output), and that a cache read between the rotary and the write
// keeps them apart.

// CHECK-LABEL: func @after_last
// CHECK: folio.kernel "rotary"
// CHECK: %[[V:.*]] = folio.kernel "linear"
// CHECK: folio.kernel "rotary_kv_write"(%arg0, %arg1, %arg2, %[[V]], %arg3) : (tensor<?x2x8xf32>, tensor<?xi64>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x16xf32>, tensor<?xi64>) -> ()
func.func @after_last(%k0: tensor<?x2x8xf32>, %pos: tensor<?xi64>,
                      %cache: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>,
                      %slots: tensor<?xi64>, %x: tensor<?x16xf32>, %q0: tensor<?x2x8xf32>) -> tensor<?x2x8xf32> {
  %w = arith.constant dense<0.1> : tensor<16x16xf32>
  %q = folio.rotary %q0, %pos {rotary_dim = 8 : i64} : (tensor<?x2x8xf32>, tensor<?xi64>) -> tensor<?x2x8xf32>
  %kf = folio.reshape %k0 : tensor<?x2x8xf32> to tensor<?x16xf32>
  %k1 = folio.reshape %kf : tensor<?x16xf32> to tensor<?x2x8xf32>
  %k = folio.rotary %k1, %pos {rotary_dim = 8 : i64} : (tensor<?x2x8xf32>, tensor<?xi64>) -> tensor<?x2x8xf32>
  %v = folio.linear %x, %w : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %v1 = folio.reshape %v : tensor<?x16xf32> to tensor<?x2x8xf32>
  %k2 = folio.reshape %k : tensor<?x2x8xf32> to tensor<?x16xf32>
  %k3 = folio.reshape %k2 : tensor<?x16xf32> to tensor<?x2x8xf32>
  folio.kv_write %cache, %k3, %v1, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
  return %q : tensor<?x2x8xf32>
}

// -----

// CHECK-LABEL: func @cache_read_between
// CHECK: folio.kernel "rotary"
// CHECK: folio.kernel "paged_attention"
// CHECK: folio.kernel "kv_write"
func.func @cache_read_between(%k0: tensor<?x2x8xf32>, %pos: tensor<?xi64>,
                              %cache: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>,
                              %slots: tensor<?xi64>, %tables: tensor<?x?xi32>,
                              %lens: tensor<?xi32>, %starts: tensor<?xi32>) -> tensor<?x2x8xf32> {
  %k = folio.rotary %k0, %pos {rotary_dim = 8 : i64} : (tensor<?x2x8xf32>, tensor<?xi64>) -> tensor<?x2x8xf32>
  %a = folio.paged_attention %k0, %cache, %tables, %lens, %starts {scale = 0.35 : f64} : (tensor<?x2x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  folio.kv_write %cache, %k, %k0, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
  return %a : tensor<?x2x8xf32>
}

// -----

// Tests that static cache scales (constants, like weights) become inputs of
// the rotary_kv_write and paged_attention kernels and reach the ops inside.

// CHECK-LABEL: func @static_scales
// CHECK: %[[KS:.*]] = arith.constant dense<5.000000e-01> : tensor<2xf32>
// CHECK: %[[VS:.*]] = arith.constant dense<2.500000e-01> : tensor<2xf32>
// CHECK: folio.kernel "rotary_kv_write"(%arg0, %arg1, %arg2, %arg3, %arg4, %[[KS]], %[[VS]])
// CHECK-NEXT: ^bb0({{.*}}, %[[KSI:[^:]*]]: tensor<2xf32>, %[[VSI:[^:]*]]: tensor<2xf32>):
// CHECK-NEXT: folio.rotary
// CHECK-NEXT: folio.kv_write {{.*}} scales(%[[KSI]], %[[VSI]])
// CHECK: folio.kernel "paged_attention"(%arg0, %arg2, %arg5, %arg6, %arg7, %[[KS]], %[[VS]])
// CHECK-NEXT: ^bb0({{.*}}, %[[KSP:[^:]*]]: tensor<2xf32>, %[[VSP:[^:]*]]: tensor<2xf32>):
// CHECK-NEXT: folio.paged_attention {{.*}} scales(%[[KSP]], %[[VSP]])
func.func @static_scales(%k0: tensor<?x2x8xf32>, %pos: tensor<?xi64>,
                         %cache: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f8E4M3FN, scale = per_head>,
                         %v: tensor<?x2x8xf32>, %slots: tensor<?xi64>, %tables: tensor<?x?xi32>,
                         %lens: tensor<?xi32>, %starts: tensor<?xi32>) -> tensor<?x2x8xf32> {
  %ks = arith.constant dense<0.5> : tensor<2xf32>
  %vs = arith.constant dense<0.25> : tensor<2xf32>
  %k = folio.rotary %k0, %pos {rotary_dim = 8 : i64} : (tensor<?x2x8xf32>, tensor<?xi64>) -> tensor<?x2x8xf32>
  folio.kv_write %cache, %k, %v, %slots scales(%ks, %vs) : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>, tensor<2xf32>, tensor<2xf32>
  %a = folio.paged_attention %k0, %cache, %tables, %lens, %starts scales(%ks, %vs) {scale = 0.35 : f64} : (tensor<?x2x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f8E4M3FN, scale = per_head>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<2xf32>, tensor<2xf32>) -> tensor<?x2x8xf32>
  return %a : tensor<?x2x8xf32>
}

// -----

// Tests that a quantized weight (folio.dequantize over constants) is data
// like a constant: it stays outside the kernels, and the linear reading it
// still takes the pointwise op after it as its epilogue.

// CHECK-LABEL: func @quantized_weight
// CHECK: %[[W:.*]] = folio.dequantize
// CHECK-NEXT: folio.kernel "linear_epilogue"(%arg0, %[[W]])
// CHECK-NOT: folio.dequantize
// CHECK: return
func.func @quantized_weight(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %q = arith.constant dense<3> : tensor<4x8xi4>
  %s = arith.constant dense<0.5> : tensor<4x1xf32>
  %w = folio.dequantize %q, %s : (tensor<4x8xi4>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = folio.linear %x, %w {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %z = folio.unary tanh %y : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}
