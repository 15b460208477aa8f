// RUN: folio-opt %s --split-input-file --folio-raise-linear | FileCheck %s

// Tests MatMul by a constant weight with its bias Add, Gemm with transB,
// and that a MatMul of two activations (attention) stays.

// CHECK-LABEL: func @projections
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[X2:.*]]: tensor<?x8xf32>, %[[Q:.*]]: tensor<?x8xf32>
// CHECK-DAG: %[[W:.*]] = arith.constant dense<1.000000e+00> : tensor<8x4xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-DAG: %[[WT:.*]] = arith.constant dense<2.000000e+00> : tensor<4x8xf32>
// CHECK: folio.linear %[[X]], %[[W]], %[[B]] : (tensor<?x?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
// CHECK: folio.linear %[[X2]], %[[WT]], %[[B]] {weight_layout = #folio.weight_layout<out_in>}
// CHECK: folio.onnx_node "MatMul"(%[[Q]],
func.func @projections(%x: tensor<?x?x8xf32>, %x2: tensor<?x8xf32>, %q: tensor<?x8xf32>, %k: tensor<8x?xf32>) -> (tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x?xf32>) {
  %w = arith.constant dense<1.0> : tensor<8x4xf32>
  %b = arith.constant dense<0.5> : tensor<4xf32>
  %wt = arith.constant dense<2.0> : tensor<4x8xf32>
  %m = folio.onnx_node "MatMul"(%x, %w) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
  %y = folio.onnx_node "Add"(%b, %m) {opset = 17 : i64} : (tensor<4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %g = folio.onnx_node "Gemm"(%x2, %wt, %b) {opset = 17 : i64, onnx_attributes = {transB = 1 : i64}} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %s = folio.onnx_node "MatMul"(%q, %k) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8x?xf32>) -> tensor<?x?xf32>
  return %y, %g, %s : tensor<?x?x4xf32>, tensor<?x4xf32>, tensor<?x?xf32>
}

// -----

// Tests that a scaled Gemm is not a plain linear.

// CHECK-LABEL: func @scaled_gemm
// CHECK: folio.onnx_node "Gemm"
func.func @scaled_gemm(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %w = arith.constant dense<1.0> : tensor<8x4xf32>
  %g = folio.onnx_node "Gemm"(%x, %w) {opset = 17 : i64, onnx_attributes = {alpha = 2.0 : f32}} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %g : tensor<?x4xf32>
}

// -----

// Tests embeddings, with Gemma's scale folded in.

// CHECK-LABEL: func @embeddings
// CHECK: folio.embedding %{{.*}}[%{{.*}}] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
// CHECK: folio.embedding %{{.*}}[%{{.*}}] {scale = 2.8284270763397217 : f64}
// CHECK-NOT: folio.onnx_node
func.func @embeddings(%ids: tensor<?x?xi64>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %t = arith.constant dense<1.0> : tensor<16x8xf32>
  %s = arith.constant dense<2.82842712> : tensor<f32>
  %e = folio.onnx_node "Gather"(%t, %ids) {opset = 17 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %f = folio.onnx_node "Gather"(%t, %ids) {opset = 17 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %g = folio.onnx_node "Mul"(%f, %s) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  return %e, %g : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Tests the SwiGLU and tanh-GELU gated MLPs.

// CHECK-LABEL: func @gated_mlps
// CHECK: folio.gated_mlp %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
// CHECK: folio.gated_mlp {{.*}} {activation = #folio.activation<gelu_tanh>}
// CHECK-NOT: folio.onnx_node
// CHECK-NOT: folio.linear
func.func @gated_mlps(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %wg = arith.constant dense<1.0> : tensor<8x16xf32>
  %wu = arith.constant dense<2.0> : tensor<8x16xf32>
  %wd = arith.constant dense<3.0> : tensor<16x8xf32>
  %g = folio.onnx_node "MatMul"(%x, %wg) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %u = folio.onnx_node "MatMul"(%x, %wu) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %sg = folio.onnx_node "Sigmoid"(%g) {opset = 17 : i64} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %silu = folio.onnx_node "Mul"(%g, %sg) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %h = folio.onnx_node "Mul"(%silu, %u) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %d = folio.onnx_node "MatMul"(%h, %wd) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>

  %half = arith.constant dense<0.5> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %three = arith.constant dense<3.0> : tensor<f32>
  %c = arith.constant dense<0.044715> : tensor<f32>
  %k = arith.constant dense<0.7978845608> : tensor<f32>
  %g2 = folio.onnx_node "MatMul"(%x, %wg) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %u2 = folio.onnx_node "MatMul"(%x, %wu) {opset = 17 : i64} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %a0 = folio.onnx_node "Mul"(%g2, %half) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %cube = folio.onnx_node "Pow"(%g2, %three) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %cc = folio.onnx_node "Mul"(%cube, %c) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %in = folio.onnx_node "Add"(%g2, %cc) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %sc = folio.onnx_node "Mul"(%in, %k) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %th = folio.onnx_node "Tanh"(%sc) {opset = 17 : i64} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %op = folio.onnx_node "Add"(%th, %one) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
  %gelu = folio.onnx_node "Mul"(%a0, %op) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %h2 = folio.onnx_node "Mul"(%gelu, %u2) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %d2 = folio.onnx_node "MatMul"(%h2, %wd) {opset = 17 : i64} : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  return %d, %d2 : tensor<?x8xf32>, tensor<?x8xf32>
}
