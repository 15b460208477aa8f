// RUN: folio-opt %s --split-input-file --folio-stack-sibling-linears | FileCheck %s

// Tests that linears sharing their input run as one over weights stacked
// along N ([K, N] weights interleave row by row), each member reading its
// columns through folio.slice.

// CHECK-LABEL: func @in_out
// CHECK: %[[W:.*]] = arith.constant dense_resource<folio_stacked_0> : tensor<2x3xf32>
// CHECK: %[[A:.*]] = folio.linear %arg0, %[[W]] : (tensor<1x?x2xf32>, tensor<2x3xf32>) -> tensor<1x?x3xf32>
// CHECK: %[[Q:.*]] = folio.slice %[[A]] {axis = 2 : i64, size = 1 : i64, start = 0 : i64} : (tensor<1x?x3xf32>) -> tensor<1x?x1xf32>
// CHECK: %[[K:.*]] = folio.slice %[[A]] {axis = 2 : i64, size = 2 : i64, start = 1 : i64} : (tensor<1x?x3xf32>) -> tensor<1x?x2xf32>
// CHECK-NOT: folio.linear
// CHECK: return %[[Q]], %[[K]]
// Rows of the stacked [2, 3] weight: [1, 3, 5] and [2, 4, 6].
// CHECK: folio_stacked_0: "0x400000000000803F000040400000A04000000040000080400000C040"
func.func @in_out(%x: tensor<1x?x2xf32>) -> (tensor<1x?x1xf32>, tensor<1x?x2xf32>) {
  %wq = arith.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %wk = arith.constant dense<[[3.0, 5.0], [4.0, 6.0]]> : tensor<2x2xf32>
  %q = folio.linear %x, %wq : (tensor<1x?x2xf32>, tensor<2x1xf32>) -> tensor<1x?x1xf32>
  %k = folio.linear %x, %wk : (tensor<1x?x2xf32>, tensor<2x2xf32>) -> tensor<1x?x2xf32>
  return %q, %k : tensor<1x?x1xf32>, tensor<1x?x2xf32>
}

// -----

// Tests that [N, K] weights append, biases stack with them, and a splat
// weight is expanded.

// CHECK-LABEL: func @out_in_with_bias
// CHECK-DAG: %[[W:.*]] = arith.constant dense_resource<folio_stacked_0> : tensor<3x2xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense_resource<folio_stacked_0_bias> : tensor<3xf32>
// CHECK: folio.linear %arg0, %[[W]], %[[B]] {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<?x3xf32>
// CHECK: folio_stacked_0: "0x400000000000803F0000004000000040000000400000004000000040"
// CHECK: folio_stacked_0_bias: "0x400000000000803F0000004000000040"
func.func @out_in_with_bias(%x: tensor<?x2xf32>) -> (tensor<?x1xf32>, tensor<?x2xf32>) {
  %wq = arith.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %wk = arith.constant dense<2.0> : tensor<2x2xf32>
  %bq = arith.constant dense<1.0> : tensor<1xf32>
  %bk = arith.constant dense<2.0> : tensor<2xf32>
  %q = folio.linear %x, %wq, %bq {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x2xf32>, tensor<1x2xf32>, tensor<1xf32>) -> tensor<?x1xf32>
  %k = folio.linear %x, %wk, %bk {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  return %q, %k : tensor<?x1xf32>, tensor<?x2xf32>
}

// -----

// Tests that linears with different inputs, or one with a bias and one
// without, stay apart.

// CHECK-LABEL: func @apart
// CHECK-COUNT-3: folio.linear
// CHECK-NOT: folio.slice
func.func @apart(%x: tensor<?x2xf32>, %y: tensor<?x2xf32>) -> (tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x1xf32>) {
  %w = arith.constant dense<1.0> : tensor<2x1xf32>
  %b = arith.constant dense<1.0> : tensor<1xf32>
  %a = folio.linear %x, %w : (tensor<?x2xf32>, tensor<2x1xf32>) -> tensor<?x1xf32>
  %c = folio.linear %y, %w : (tensor<?x2xf32>, tensor<2x1xf32>) -> tensor<?x1xf32>
  %d = folio.linear %x, %w, %b : (tensor<?x2xf32>, tensor<2x1xf32>, tensor<1xf32>) -> tensor<?x1xf32>
  return %a, %c, %d : tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x1xf32>
}
