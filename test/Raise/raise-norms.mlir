// RUN: folio-opt %s --split-input-file --folio-raise-norms | FileCheck %s

// Tests the RMSNorm torch writes: Pow, ReduceMean(-1), Add eps, Sqrt,
// Div(1, .), Mul x, Mul w.

// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>
// CHECK: %[[W:.*]] = arith.constant dense<{{.*}}> : tensor<8xf32>
// CHECK: %[[N:.*]] = folio.rms_norm %[[X]], %[[W]] {epsilon = 9.9999999747524271E-7 : f64}
// CHECK-NOT: folio.onnx_node
// CHECK: return %[[N]]
func.func @rms_norm(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %p = folio.onnx_node "Pow"(%x, %two) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %m = folio.onnx_node "ReduceMean"(%p) {opset = 17 : i64, onnx_attributes = {axes = array<i64: -1>, keepdims = 1 : i64}} : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %a = folio.onnx_node "Add"(%m, %eps) {opset = 17 : i64} : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %s = folio.onnx_node "Sqrt"(%a) {opset = 17 : i64} : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %r = folio.onnx_node "Div"(%one, %s) {opset = 17 : i64} : (tensor<f32>, tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = folio.onnx_node "Mul"(%x, %r) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %y = folio.onnx_node "Mul"(%w, %n) {opset = 17 : i64} : (tensor<8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Tests Gemma's (1 + w) weight and the x / sqrt(.) form with Mul(x, x).

// CHECK-LABEL: func @rms_norm_gemma
// CHECK: folio.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999747524271E-7 : f64, weight_offset = 1.000000e+00 : f64}
// CHECK-NOT: folio.onnx_node
func.func @rms_norm_gemma(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  %wc = arith.constant dense<0.5> : tensor<8xf32>
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %sq = folio.onnx_node "Mul"(%x, %x) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %m = folio.onnx_node "ReduceMean"(%sq) {opset = 17 : i64, onnx_attributes = {axes = array<i64: 1>, keepdims = 1 : i64}} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %a = folio.onnx_node "Add"(%eps, %m) {opset = 17 : i64} : (tensor<f32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %s = folio.onnx_node "Sqrt"(%a) {opset = 17 : i64} : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %n = folio.onnx_node "Div"(%x, %s) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %w1 = folio.onnx_node "Add"(%wc, %one) {opset = 17 : i64} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = folio.onnx_node "Mul"(%n, %w1) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Tests that a mean over another axis, or a normalised value that is not
// the one squared, is left alone.

// CHECK-LABEL: func @not_rms_norm
// CHECK-NOT: folio.rms_norm
func.func @not_rms_norm(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = arith.constant dense<1.5> : tensor<8xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %p = folio.onnx_node "Pow"(%x, %two) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m0 = folio.onnx_node "ReduceMean"(%p) {opset = 17 : i64, onnx_attributes = {axes = array<i64: 0>, keepdims = 1 : i64}} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %a0 = folio.onnx_node "Add"(%m0, %eps) {opset = 17 : i64} : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %s0 = folio.onnx_node "Sqrt"(%a0) {opset = 17 : i64} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n0 = folio.onnx_node "Div"(%x, %s0) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %y0 = folio.onnx_node "Mul"(%n0, %w) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %m1 = folio.onnx_node "ReduceMean"(%p) {opset = 17 : i64, onnx_attributes = {axes = array<i64: -1>, keepdims = 1 : i64}} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %a1 = folio.onnx_node "Add"(%m1, %eps) {opset = 17 : i64} : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s1 = folio.onnx_node "Sqrt"(%a1) {opset = 17 : i64} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n1 = folio.onnx_node "Div"(%z, %s1) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y1 = folio.onnx_node "Mul"(%n1, %w) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y0, %y1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Tests LayerNorm written out (mean, centre, variance) and the opset-17 op.

// CHECK-LABEL: func @layer_norms
// CHECK: folio.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999997473787516E-6 : f64}
// CHECK: folio.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.9999997473787516E-6 : f64}
// CHECK-NOT: folio.onnx_node
func.func @layer_norms(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = arith.constant dense<1.5> : tensor<8xf32>
  %b = arith.constant dense<0.5> : tensor<8xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-5> : tensor<f32>
  %mean = folio.onnx_node "ReduceMean"(%x) {opset = 17 : i64, onnx_attributes = {axes = array<i64: -1>}} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %d = folio.onnx_node "Sub"(%x, %mean) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %p = folio.onnx_node "Pow"(%d, %two) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %var = folio.onnx_node "ReduceMean"(%p) {opset = 17 : i64, onnx_attributes = {axes = array<i64: -1>}} : (tensor<?x8xf32>) -> tensor<?x1xf32>
  %a = folio.onnx_node "Add"(%var, %eps) {opset = 17 : i64} : (tensor<?x1xf32>, tensor<f32>) -> tensor<?x1xf32>
  %s = folio.onnx_node "Sqrt"(%a) {opset = 17 : i64} : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %n = folio.onnx_node "Div"(%d, %s) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %m = folio.onnx_node "Mul"(%n, %w) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %y = folio.onnx_node "Add"(%m, %b) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %z = folio.onnx_node "LayerNormalization"(%x, %w, %b) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64, epsilon = 1.0e-5 : f32}} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %y, %z : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Tests the fused RMS norms: opset 23 and ONNX Runtime's, the skip form
// keeping its residual sum.

// CHECK-LABEL: func @fused_rms
// CHECK: folio.rms_norm %{{.*}}, %{{.*}} {epsilon = 9.9999999747524271E-7 : f64}
// CHECK: %[[SUM:.*]] = folio.onnx_node "Add"
// CHECK: folio.rms_norm %[[SUM]]
// CHECK: return {{.*}}, %[[SUM]]
func.func @fused_rms(%x: tensor<?x8xf32>, %r: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = arith.constant dense<1.5> : tensor<8xf32>
  %a = folio.onnx_node "RMSNormalization"(%x, %w) {opset = 23 : i64, onnx_attributes = {epsilon = 1.0e-6 : f32}} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %b:4 = folio.onnx_node "SkipSimplifiedLayerNormalization"(%x, %r, %w) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {epsilon = 1.0e-6 : f32}} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x8xf32>)
  return %a, %b#0, %b#3 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Tests ONNX Runtime's SkipLayerNormalization (input + skip + bias, then
// LayerNorm with gamma and beta; output 3 is the sum), as the GenAI builder
// writes Phi's.

// CHECK-LABEL: func @skip_layer_norm
// CHECK: %[[S:.*]] = folio.onnx_node "Add"(%arg0, %arg1)
// CHECK: %[[SB:.*]] = folio.onnx_node "Add"(%[[S]], %{{.*}})
// CHECK: %[[N:.*]] = folio.layer_norm %[[SB]], %{{.*}}, %{{.*}} {epsilon = 9.9999999747524271E-7 : f64}
// CHECK: return %[[N]], %[[SB]]
func.func @skip_layer_norm(%x: tensor<?x8xf32>, %r: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %g = arith.constant dense<1.5> : tensor<8xf32>
  %b = arith.constant dense<0.5> : tensor<8xf32>
  %bias = arith.constant dense<0.25> : tensor<8xf32>
  %y:4 = folio.onnx_node "SkipLayerNormalization"(%x, %r, %g, %b, %bias) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {epsilon = 1.0e-6 : f32}} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x8xf32>)
  return %y#0, %y#3 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Tests that a per-head norm written over [b, s * heads, d] (the GenAI
// builder's Qwen3 q/k norms: Reshape [0, -1, 16], norm, Reshape [0, -1, 64])
// becomes the same norm over [b, s, heads, d], which keeps the token axis.

// CHECK-LABEL: func @per_head_norm
// CHECK: %[[H:.*]] = folio.onnx_node "Reshape"(%arg0, %{{.*}}) {{.*}} : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
// CHECK: %[[N:.*]] = folio.rms_norm %[[H]], %{{.*}} {epsilon = 9.9999999747524271E-7 : f64} : (tensor<?x?x4x16xf32>, tensor<16xf32>) -> tensor<?x?x4x16xf32>
// CHECK: %[[M:.*]] = folio.onnx_node "Reshape"(%[[N]], %{{.*}}) {{.*}} -> tensor<?x?x64xf32>
// CHECK: return %[[M]]
func.func @per_head_norm(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %w = arith.constant dense<1.5> : tensor<16xf32>
  %split = arith.constant dense<[0, -1, 16]> : tensor<3xi64>
  %merge = arith.constant dense<[0, -1, 64]> : tensor<3xi64>
  %h = folio.onnx_node "Reshape"(%x, %split) {opset = 21 : i64} : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %n:1 = folio.onnx_node "SimplifiedLayerNormalization"(%h, %w) {opset = 1 : i64, onnx_attributes = {epsilon = 1.0e-6 : f32, axis = -1 : i64}} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %m = folio.onnx_node "Reshape"(%n, %merge) {opset = 21 : i64} : (tensor<?x?x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}
