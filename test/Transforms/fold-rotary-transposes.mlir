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

// -----

// Tests GPT-NeoX's form: heads moved before tokens, then q, k and v cut
// out of each head's fused [q | k | v] by Slices on head_dim. The Slices
// read the token-major tensor instead, q and k fold as above, and v, which
// is transposed straight back, keeps no transpose at all.

// CHECK-LABEL: func @sliced_heads
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x?x2x48xf32>
// CHECK-NOT: "Transpose"
// CHECK: %[[Q:.*]] = folio.onnx_node "Slice"(%[[X]], {{.*}} -> tensor<?x?x2x16xf32>
// CHECK: %[[V:.*]] = folio.onnx_node "Slice"(%[[X]], {{.*}} -> tensor<?x?x2x16xf32>
// CHECK: %[[FQ:.*]] = tensor.collapse_shape %[[Q]] {{\[}}[0, 1], [2], [3]]
// CHECK: folio.rotary %[[FQ]]
// CHECK: %[[E:.*]] = tensor.expand_shape
// CHECK-NOT: "Transpose"
// CHECK: return %[[E]], %[[V]]
func.func @sliced_heads(%x: tensor<1x?x2x48xf32>, %pos: tensor<?x?xi64>) -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>) {
  %zero = arith.constant dense<0> : tensor<1xi64>
  %s16 = arith.constant dense<16> : tensor<1xi64>
  %s32 = arith.constant dense<32> : tensor<1xi64>
  %s48 = arith.constant dense<48> : tensor<1xi64>
  %axis = arith.constant dense<3> : tensor<1xi64>
  %t = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x2x48xf32>) -> tensor<1x2x?x48xf32>
  %q = folio.onnx_node "Slice"(%t, %zero, %s16, %axis) {opset = 17 : i64} : (tensor<1x2x?x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x2x?x16xf32>
  %v = folio.onnx_node "Slice"(%t, %s32, %s48, %axis) {opset = 17 : i64} : (tensor<1x2x?x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x2x?x16xf32>
  %r = folio.rotary %q, %pos {rotary_dim = 4 : i64} : (tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %qb = folio.onnx_node "Transpose"(%r) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  %vb = folio.onnx_node "Transpose"(%v) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  return %qb, %vb : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
}

// -----

// Tests what stays: a Slice that cuts the heads (dim 1) or has no axes
// operand keeps its transpose.

// CHECK-LABEL: func @slice_keeps
// CHECK: %[[T:.*]] = folio.onnx_node "Transpose"
// CHECK: folio.onnx_node "Slice"(%[[T]],
// CHECK: folio.onnx_node "Slice"(%[[T]],
func.func @slice_keeps(%x: tensor<1x?x2x48xf32>) -> (tensor<1x1x?x48xf32>, tensor<1x2x?x48xf32>) {
  %zero = arith.constant dense<0> : tensor<1xi64>
  %one = arith.constant dense<1> : tensor<1xi64>
  %t = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x2x48xf32>) -> tensor<1x2x?x48xf32>
  %h = folio.onnx_node "Slice"(%t, %zero, %one, %one) {opset = 17 : i64} : (tensor<1x2x?x48xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x48xf32>
  %b = folio.onnx_node "Slice"(%t, %zero, %one) {opset = 17 : i64} : (tensor<1x2x?x48xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x?x48xf32>
  return %h, %b : tensor<1x1x?x48xf32>, tensor<1x2x?x48xf32>
}

// -----

// Tests the same with a Split on head_dim (torch.export's form of
// GPT-NeoX): one Split of the token-major tensor, q and k folded, v with no
// transpose.

// CHECK-LABEL: func @split_heads
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x?x2x48xf32>
// CHECK-NOT: "Transpose"
// CHECK: %[[S:.*]]:3 = folio.onnx_node "Split"(%[[X]]) {{.*}} -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<1x?x2x16xf32>)
// CHECK: tensor.collapse_shape %[[S]]#0
// CHECK: tensor.collapse_shape %[[S]]#1
// CHECK-NOT: "Transpose"
// CHECK: return %{{.*}}, %{{.*}}, %[[S]]#2
func.func @split_heads(%x: tensor<1x?x2x48xf32>, %pos: tensor<?x?xi64>) -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<1x?x2x16xf32>) {
  %t = folio.onnx_node "Transpose"(%x) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x2x48xf32>) -> tensor<1x2x?x48xf32>
  %s:3 = folio.onnx_node "Split"(%t) {opset = 18 : i64, onnx_attributes = {axis = 3 : i64, num_outputs = 3 : i64}} : (tensor<1x2x?x48xf32>) -> (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<1x2x?x16xf32>)
  %q = folio.rotary %s#0, %pos {rotary_dim = 4 : i64} : (tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %k = folio.rotary %s#1, %pos {rotary_dim = 4 : i64} : (tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %qb = folio.onnx_node "Transpose"(%q) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  %kb = folio.onnx_node "Transpose"(%k) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  %vb = folio.onnx_node "Transpose"(%s#2) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x2x?x16xf32>) -> tensor<1x?x2x16xf32>
  return %qb, %kb, %vb : tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<1x?x2x16xf32>
}
