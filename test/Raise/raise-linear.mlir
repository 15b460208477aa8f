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

// -----

// Tests tied embeddings gathered from the transposed output projection
// (Gather(Transpose(lm_head [8, 16]), ids), the GenAI builder's form): the
// table is a transposed copy [16, 8] and the projection keeps its weight.

// CHECK-LABEL: func @transposed_table
// CHECK: %[[T:.*]] = arith.constant dense_resource<folio_embedding_table_1> : tensor<16x8xf32>
// CHECK: folio.embedding %[[T]][%arg0] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
// CHECK: folio.linear %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
// Row 0 of the copy is column 0 of the weight: 0, 16, 32, 48 (after the
// blob's 64-byte alignment word).
// CHECK: folio_embedding_table_1: "0x40000000000000000000804100000042000040420000804200
func.func @transposed_table(%ids: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0], [32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0], [48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0], [64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0], [80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0], [96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0], [112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0]]> : tensor<8x16xf32>
  %t = folio.onnx_node "Transpose"(%w) {opset = 21 : i64, onnx_attributes = {perm = array<i64: 1, 0>}} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %e = folio.onnx_node "Gather"(%t, %ids) {opset = 21 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %l = folio.onnx_node "MatMul"(%e, %w) {opset = 21 : i64} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %l : tensor<?x?x16xf32>
}
