// RUN: folio-opt %s --split-input-file --folio-fold-rotary-transposes | FileCheck %s

// Tests that transpose -> rotary -> transpose back (through tensor.cast
// views, as page-kv leaves q and k) becomes the serving form of rotary on
// the collapsed token-major tensor, keeping every rotary attribute and the
// type the users expect.

// CHECK-LABEL: func @fold
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x4x8xf32>, %[[P:.*]]: tensor<?x?xi64>, %[[CS:.*]]: tensor<128x8xf32>)
// CHECK-NOT: "Transpose"
// CHECK: %[[FX:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2], [3]] : tensor<1x?x4x8xf32> into tensor<?x4x8xf32>
// CHECK: %[[FP:.*]] = tensor.collapse_shape %[[P]] {{\[}}[0, 1]] : tensor<?x?xi64> into tensor<?xi64>
// CHECK: %[[R:.*]] = folio.rotary %[[FX]], %[[FP]], %[[CS]] {rotary_dim = 8 : i64, style = #folio.rope_style<interleaved>} : (tensor<?x4x8xf32>, tensor<?xi64>, tensor<128x8xf32>) -> tensor<?x4x8xf32>
// CHECK: %[[S:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<1x?x4x8xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0, 1], [2], [3]] output_shape [1, %[[S]], 4, 8] : tensor<?x4x8xf32> into tensor<1x?x4x8xf32>
// CHECK: %[[C:.*]] = tensor.cast %[[E]] : tensor<1x?x4x8xf32> to tensor<?x?x4x8xf32>
// CHECK: return %[[C]]
func.func @fold(%x: tensor<1x?x4x8xf32>, %pos: tensor<?x?xi64>, %cs: tensor<128x8xf32>) -> tensor<?x?x4x8xf32> {
  %t = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x4x8xf32>) -> tensor<?x4x?x8xf32>
  %r = folio.rotary %t, %pos, %cs {rotary_dim = 8 : i64, style = #folio.rope_style<interleaved>} : (tensor<?x4x?x8xf32>, tensor<?x?xi64>, tensor<128x8xf32>) -> tensor<?x4x?x8xf32>
  %c = tensor.cast %r : tensor<?x4x?x8xf32> to tensor<?x4x?x8xf32>
  %back = folio.onnx_node "Transpose"(%c) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x4x?x8xf32>) -> tensor<?x?x4x8xf32>
  return %back : tensor<?x?x4x8xf32>
}

// -----

// Tests that a fully dynamic [B, S, H, D] input gets both B and S from
// tensor.dim.

// CHECK-LABEL: func @dynamic_batch
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x?x2x16xf32>
// CHECK: %[[S:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<?x?x2x16xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [%[[B]], %[[S]], 2, 16]
// CHECK-NOT: "Transpose"
func.func @dynamic_batch(%x: tensor<?x?x2x16xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x2x16xf32> {
  %t = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x2x16xf32>) -> tensor<?x2x?x16xf32>
  %r = folio.rotary %t, %pos {rotary_dim = 8 : i64} : (tensor<?x2x?x16xf32>, tensor<?x?xi32>) -> tensor<?x2x?x16xf32>
  %back = folio.onnx_node "Transpose"(%r) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  return %back : tensor<?x?x2x16xf32>
}

// -----

// Tests what stays: a rotary whose [B, H, S, D] result has another user
// (the layout is needed anyway), a transpose back with another permutation,
// and an input that is not a transpose.

// CHECK-LABEL: func @keep
// CHECK-COUNT-2: folio.onnx_node "Transpose"(%arg0)
// CHECK-NOT: tensor.collapse_shape
func.func @keep(%x: tensor<1x?x4x8xf32>, %pos: tensor<?x?xi64>, %y: tensor<1x4x?x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x8x?xf32>, tensor<1x?x4x8xf32>) {
  %t = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x4x8xf32>) -> tensor<?x4x?x8xf32>
  %r = folio.rotary %t, %pos {rotary_dim = 8 : i64} : (tensor<?x4x?x8xf32>, tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
  %back = folio.onnx_node "Transpose"(%r) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x4x?x8xf32>) -> tensor<?x?x4x8xf32>
  %t2 = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x4x8xf32>) -> tensor<?x4x?x8xf32>
  %r2 = folio.rotary %t2, %pos {rotary_dim = 8 : i64} : (tensor<?x4x?x8xf32>, tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
  %other = folio.onnx_node "Transpose"(%r2) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 3, 1>}} : (tensor<?x4x?x8xf32>) -> tensor<?x4x8x?xf32>
  %r3 = folio.rotary %y, %pos {rotary_dim = 8 : i64} : (tensor<1x4x?x8xf32>, tensor<?x?xi64>) -> tensor<1x4x?x8xf32>
  %back3 = folio.onnx_node "Transpose"(%r3) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x4x?x8xf32>) -> tensor<1x?x4x8xf32>
  return %back, %r, %other, %back3 : tensor<?x?x4x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x8x?xf32>, tensor<1x?x4x8xf32>
}
