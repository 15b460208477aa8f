// RUN: folio-opt %s --split-input-file --folio-fold-unit-transposes | FileCheck %s

// Tests Falcon's multi-query heads as torch.export writes them: the fused
// projection's heads moved to the front, K's head sliced there and its unit
// dims swapped, rotated head-major, and swapped back for the cache. The
// slice moves before the transpose, every transpose then moves only unit
// dims (reshapes), and the rotary runs on [tokens, 1, head_dim].

// CHECK-LABEL: func @falcon_k
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x?x6x8xf32>, %[[P:[^:]*]]: tensor<1x?xi64>)
// CHECK-NOT: folio.transpose
// CHECK: %[[S:.*]] = folio.slice %[[X]] {axis = 2 : i64, size = 1 : i64, start = 4 : i64} : (tensor<1x?x6x8xf32>) -> tensor<1x?x1x8xf32>
// CHECK: %[[R:.*]] = folio.reshape %[[S]] : tensor<1x?x1x8xf32> to tensor<1x1x?x8xf32>
// CHECK: %[[K:.*]] = folio.reshape %[[R]] : tensor<1x1x?x8xf32> to tensor<1x1x?x8xf32>
// CHECK: %[[ROWS:.*]] = folio.reshape %[[K]] : tensor<1x1x?x8xf32> to tensor<?x1x8xf32>
// CHECK: %[[FLAT:.*]] = folio.reshape %[[P]] : tensor<1x?xi64> to tensor<?xi64>
// CHECK: %[[ROT:.*]] = folio.rotary %[[ROWS]], %[[FLAT]] {rotary_dim = 8 : i64} : (tensor<?x1x8xf32>, tensor<?xi64>) -> tensor<?x1x8xf32>
// CHECK: %[[BACK:.*]] = folio.reshape %[[ROT]] : tensor<?x1x8xf32> to tensor<1x1x?x8xf32>
// CHECK: %[[OUT:.*]] = folio.reshape %[[BACK]] : tensor<1x1x?x8xf32> to tensor<1x?x1x8xf32>
// CHECK: return %[[OUT]]
func.func @falcon_k(%x: tensor<1x?x6x8xf32>, %pos: tensor<1x?xi64>) -> tensor<1x?x1x8xf32> {
  %t = folio.transpose %x [2, 0, 1, 3] : (tensor<1x?x6x8xf32>) -> tensor<6x1x?x8xf32>
  %s = folio.slice %t {axis = 0 : i64, size = 1 : i64, start = 4 : i64} : (tensor<6x1x?x8xf32>) -> tensor<1x1x?x8xf32>
  %k = folio.transpose %s [1, 0, 2, 3] : (tensor<1x1x?x8xf32>) -> tensor<1x1x?x8xf32>
  %r = folio.rotary %k, %pos {rotary_dim = 8 : i64} : (tensor<1x1x?x8xf32>, tensor<1x?xi64>) -> tensor<1x1x?x8xf32>
  %out = folio.transpose %r [0, 2, 1, 3] : (tensor<1x1x?x8xf32>) -> tensor<1x?x1x8xf32>
  return %out : tensor<1x?x1x8xf32>
}

// -----

// Tests what stays: a transpose that moves heads of more than one (a real
// copy), one with a user that is not a slice (its slices stay after it),
// and the rotary of several heads in [B, H, S, D].

// CHECK-LABEL: func @keeps
// CHECK: %[[T:.*]] = folio.transpose %{{.*}} [0, 2, 1, 3] : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
// CHECK: folio.slice %[[T]] {axis = 3 : i64
// CHECK: folio.rotary %[[T]], %{{.*}} {rotary_dim = 8 : i64} : (tensor<1x4x?x8xf32>, tensor<1x?xi64>)
func.func @keeps(%x: tensor<1x?x4x8xf32>, %pos: tensor<1x?xi64>) -> (tensor<1x4x?x4xf32>, tensor<1x4x?x8xf32>) {
  %t = folio.transpose %x [0, 2, 1, 3] : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
  %s = folio.slice %t {axis = 3 : i64, size = 4 : i64, start = 0 : i64} : (tensor<1x4x?x8xf32>) -> tensor<1x4x?x4xf32>
  %r = folio.rotary %t, %pos {rotary_dim = 8 : i64} : (tensor<1x4x?x8xf32>, tensor<1x?xi64>) -> tensor<1x4x?x8xf32>
  return %s, %r : tensor<1x4x?x4xf32>, tensor<1x4x?x8xf32>
}

// -----

// Tests slices on a transpose's every user: each slices the input on the
// permuted axis, and the transpose of a multi-head part stays a transpose.

// CHECK-LABEL: func @two_slices
// CHECK-DAG: %[[A:.*]] = folio.slice %{{.*}} {axis = 2 : i64, size = 2 : i64, start = 0 : i64} : (tensor<1x?x4x8xf32>) -> tensor<1x?x2x8xf32>
// CHECK-DAG: folio.transpose %[[A]] [0, 2, 1, 3] : (tensor<1x?x2x8xf32>) -> tensor<1x2x?x8xf32>
// CHECK-DAG: %[[B:.*]] = folio.slice %{{.*}} {axis = 2 : i64, size = 1 : i64, start = 3 : i64} : (tensor<1x?x4x8xf32>) -> tensor<1x?x1x8xf32>
// CHECK-DAG: folio.reshape %[[B]] : tensor<1x?x1x8xf32> to tensor<1x1x?x8xf32>
func.func @two_slices(%x: tensor<1x?x4x8xf32>) -> (tensor<1x2x?x8xf32>, tensor<1x1x?x8xf32>) {
  %t = folio.transpose %x [0, 2, 1, 3] : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
  %a = folio.slice %t {axis = 1 : i64, size = 2 : i64, start = 0 : i64} : (tensor<1x4x?x8xf32>) -> tensor<1x2x?x8xf32>
  %b = folio.slice %t {axis = 1 : i64, size = 1 : i64, start = 3 : i64} : (tensor<1x4x?x8xf32>) -> tensor<1x1x?x8xf32>
  return %a, %b : tensor<1x2x?x8xf32>, tensor<1x1x?x8xf32>
}
