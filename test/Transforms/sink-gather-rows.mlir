// RUN: folio-opt %s --split-input-file --folio-sink-gather-rows | FileCheck %s

// Tests that the final norm, the lm_head and a soft-cap run on the gathered
// rows: the gather moves to the residual stream.

// CHECK-LABEL: func @lm_head_with_softcap
// CHECK: %[[X:.*]] = folio.reshape %arg0 : tensor<1x?x8xf32> to tensor<?x8xf32>
// CHECK-NEXT: %[[G:.*]] = folio.gather_rows %[[X]][%arg1] : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[N:.*]] = folio.rms_norm %[[G]], %{{.*}} {{.*}} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[L:.*]] = folio.linear %[[N]], %{{.*}} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
// CHECK-NEXT: %[[D:.*]] = folio.binary div %[[L]], %{{.*}} : (tensor<?x16xf32>, tensor<f32>) -> tensor<?x16xf32>
// CHECK-NEXT: %[[T:.*]] = folio.unary tanh %[[D]]
// CHECK-NEXT: %[[M:.*]] = folio.binary mul %{{.*}}, %[[T]] : (tensor<f32>, tensor<?x16xf32>) -> tensor<?x16xf32>
// CHECK-NEXT: return %[[M]]
func.func @lm_head_with_softcap(%h: tensor<1x?x8xf32>, %idx: tensor<?xi32>) -> tensor<?x16xf32> {
  %g = arith.constant dense<1.0> : tensor<8xf32>
  %w = arith.constant dense<0.5> : tensor<8x16xf32>
  %c = arith.constant dense<30.0> : tensor<f32>
  %n = folio.rms_norm %h, %g {epsilon = 1.0e-6 : f64} : (tensor<1x?x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
  %l = folio.linear %n, %w : (tensor<1x?x8xf32>, tensor<8x16xf32>) -> tensor<1x?x16xf32>
  %d = folio.binary div %l, %c : (tensor<1x?x16xf32>, tensor<f32>) -> tensor<1x?x16xf32>
  %t = folio.unary tanh %d : (tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %m = folio.binary mul %c, %t : (tensor<f32>, tensor<1x?x16xf32>) -> tensor<1x?x16xf32>
  %r = folio.reshape %m : tensor<1x?x16xf32> to tensor<?x16xf32>
  %out = folio.gather_rows %r[%idx] : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  return %out : tensor<?x16xf32>
}

// -----

// Tests that the gather stops at a value with another user (the hidden state
// is needed for every row) and at an op that mixes rows with a non-row
// constant.

// CHECK-LABEL: func @stops
// CHECK: %[[L:.*]] = folio.linear %arg0
// CHECK: folio.binary add %[[L]], %{{.*}} : (tensor<?x16xf32>, tensor<4x16xf32>)
// CHECK: folio.gather_rows
// CHECK-NEXT: return
func.func @stops(%h: tensor<?x8xf32>, %idx: tensor<?xi32>) -> (tensor<?x16xf32>, tensor<?x8xf32>) {
  %w = arith.constant dense<0.5> : tensor<8x16xf32>
  %b = arith.constant dense<0.5> : tensor<4x16xf32>
  %l = folio.linear %h, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %a = folio.binary add %l, %b : (tensor<?x16xf32>, tensor<4x16xf32>) -> tensor<?x16xf32>
  %out = folio.gather_rows %a[%idx] : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  return %out, %h : tensor<?x16xf32>, tensor<?x8xf32>
}

// -----

// Tests that a linear whose result is also used elsewhere stays on every row.

// CHECK-LABEL: func @shared_linear
// CHECK: %[[L:.*]] = folio.linear %arg0
// CHECK-NEXT: folio.gather_rows %[[L]]
func.func @shared_linear(%h: tensor<?x8xf32>, %idx: tensor<?xi32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %w = arith.constant dense<0.5> : tensor<8x16xf32>
  %l = folio.linear %h, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %out = folio.gather_rows %l[%idx] : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  return %out, %l : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// Tests that a gather whose type the rebuilt rows would not have (static
// rows) is left alone rather than rewritten.

// CHECK-LABEL: func @static_rows
// CHECK: folio.linear %arg0
// CHECK-NEXT: folio.gather_rows
func.func @static_rows(%h: tensor<8x8xf32>, %idx: tensor<4xi32>) -> tensor<4x16xf32> {
  %w = arith.constant dense<0.5> : tensor<8x16xf32>
  %l = folio.linear %h, %w : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %out = folio.gather_rows %l[%idx] : (tensor<8x16xf32>, tensor<4xi32>) -> tensor<4x16xf32>
  return %out : tensor<4x16xf32>
}
