// RUN: folio-opt %s --split-input-file --folio-onnx-simplify | FileCheck %s

// Tests that a shape computed from static dims folds to a constant, and
// that the Reshape it fed keeps only the data operand's producer.

// CHECK-LABEL: func @fold_static_shape
func.func @fold_static_shape(%x: tensor<2x32xf32>) -> tensor<2x4x8xf32> {
  // CHECK-NOT: "Shape"
  // CHECK-NOT: "Concat"
  // CHECK: %[[T:.*]] = arith.constant dense<[2, 4, 8]> : tensor<3xi64>
  // CHECK: folio.onnx_node "Reshape"(%{{.*}}, %[[T]])
  %s = folio.onnx_node "Shape"(%x) {opset = 17 : i64} : (tensor<2x32xf32>) -> tensor<2xi64>
  %i = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  %b = folio.onnx_node "Gather"(%s, %i) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %h = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[4, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  %t = folio.onnx_node "Concat"(%b, %h) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %r = folio.onnx_node "Reshape"(%x, %t) {opset = 17 : i64} : (tensor<2x32xf32>, tensor<3xi64>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// Tests that no-op nodes are forwarded: a Cast to the same type, an
// Identity, and a Reshape whose output dims equal its input's
// (symbolically), and that dead nodes go.

// CHECK-LABEL: func @forward_noops
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>
func.func @forward_noops(%x: tensor<?x?x32xf32> {folio.dim_names = ["b", "s", ""]}) -> tensor<?x?x32xf32> {
  // CHECK-NEXT: %[[N:.*]] = folio.onnx_node "Neg"(%[[X]])
  // CHECK-NEXT: return %[[N]]
  %c = folio.onnx_node "Cast"(%x) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %i = folio.onnx_node "Identity"(%c) {opset = 17 : i64} : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %s = folio.onnx_node "Shape"(%i) {opset = 17 : i64} : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %r = folio.onnx_node "Reshape"(%i, %s) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<3xi64>) -> tensor<?x?x32xf32>
  %unused = folio.onnx_node "Exp"(%r) {opset = 17 : i64} : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %n = folio.onnx_node "Neg"(%r) {opset = 17 : i64} : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// Tests that a Reshape that really changes dims stays, that a Cast that
// changes the type stays, and that the scale computed from a shape folds.

// CHECK-LABEL: func @keep_real_work
func.func @keep_real_work(%x: tensor<?x?x32xf32> {folio.dim_names = ["b", "s", ""]}) -> (tensor<?x?x4x8xf32>, tensor<?x?x32xf16>, tensor<f32>) {
  // CHECK: arith.constant dense<[0, 0, 4, 8]> : tensor<4xi64>
  // CHECK: folio.onnx_node "Reshape"
  // CHECK: folio.onnx_node "Cast"
  // CHECK-NOT: "Sqrt"
  // CHECK: arith.constant dense<1.250000e-01> : tensor<f32>
  %t = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[0, 0, 4, 8]> : tensor<4xi64>}} : () -> tensor<4xi64>
  %r = folio.onnx_node "Reshape"(%x, %t) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  %h = folio.onnx_node "Cast"(%x) {opset = 17 : i64, onnx_attributes = {to = 10 : i64}} : (tensor<?x?x32xf32>) -> tensor<?x?x32xf16>
  %eight = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<64.0> : tensor<f32>}} : () -> tensor<f32>
  %sq = folio.onnx_node "Sqrt"(%eight) {opset = 17 : i64} : (tensor<f32>) -> tensor<f32>
  %one = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  %scale = folio.onnx_node "Div"(%one, %sq) {opset = 17 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %r, %h, %scale : tensor<?x?x4x8xf32>, tensor<?x?x32xf16>, tensor<f32>
}

// -----

// Tests that a Transpose undoing an earlier one, through a tensor.cast view
// (the pattern page-kv leaves around paged attention), is forwarded with a
// cast to the type its users expect; a Transpose that does not undo it
// stays.

// CHECK-LABEL: func @transpose_pairs
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x4x8xf32>
// CHECK-NOT: "Transpose"{{.*}}(%[[X]])
// CHECK: %[[C:.*]] = tensor.cast %[[X]] : tensor<1x?x4x8xf32> to tensor<?x?x4x8xf32>
// CHECK: %[[T:.*]] = folio.onnx_node "Transpose"(%[[X]]) {{.*}}perm = array<i64: 0, 2, 3, 1>
// CHECK: return %[[C]], %[[T]]
func.func @transpose_pairs(%x: tensor<1x?x4x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<1x4x8x?xf32>) {
  %t = folio.onnx_node "Transpose"(%x) {opset = 13 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<1x?x4x8xf32>) -> tensor<1x4x?x8xf32>
  %c = tensor.cast %t : tensor<1x4x?x8xf32> to tensor<?x4x?x8xf32>
  %back = folio.onnx_node "Transpose"(%c) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x4x?x8xf32>) -> tensor<?x?x4x8xf32>
  %other = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 3, 1>}} : (tensor<1x?x4x8xf32>) -> tensor<1x4x8x?xf32>
  return %back, %other : tensor<?x?x4x8xf32>, tensor<1x4x8x?xf32>
}

// -----

// Tests that static quantization's QDQ pair on an activation (per tensor,
// uint8, zero point 128) becomes float arithmetic: divide by the scale,
// clamp to the codes' range less the zero point ([0 - 128, 255 - 128]),
// round half to even by adding and subtracting 1.5 * 2^23, and multiply by
// the dequantization scale; a DequantizeLinear over a constant weight is
// left for raise-linear.

// CHECK-LABEL: func @activation_qdq
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>
// CHECK: %[[S:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[D:.*]] = folio.onnx_node "Div"(%[[X]], %[[S]])
// CHECK: %[[LO:.*]] = arith.constant dense<-1.280000e+02> : tensor<f32>
// CHECK: %[[A:.*]] = folio.onnx_node "Max"(%[[D]], %[[LO]])
// CHECK: %[[HI:.*]] = arith.constant dense<1.270000e+02> : tensor<f32>
// CHECK: %[[B:.*]] = folio.onnx_node "Min"(%[[A]], %[[HI]])
// CHECK: %[[M:.*]] = arith.constant dense<0x4B400000> : tensor<f32>
// CHECK: %[[R:.*]] = folio.onnx_node "Add"(%[[B]], %[[M]])
// CHECK: %[[M2:.*]] = arith.constant dense<0x4B400000> : tensor<f32>
// CHECK: %[[R2:.*]] = folio.onnx_node "Sub"(%[[R]], %[[M2]])
// CHECK: %[[T:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[Y:.*]] = folio.onnx_node "Mul"(%[[R2]], %[[T]])
// CHECK-NOT: QuantizeLinear
// CHECK: folio.onnx_node "DequantizeLinear"
// CHECK: folio.onnx_node "MatMul"(%[[Y]]
func.func @activation_qdq(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %s = arith.constant dense<0.25> : tensor<f32>
  %z = arith.constant dense<128> : tensor<ui8>
  %q = folio.onnx_node "QuantizeLinear"(%x, %s, %z) {opset = 21 : i64} : (tensor<?x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<?x8xui8>
  %a = folio.onnx_node "DequantizeLinear"(%q, %s, %z) {opset = 21 : i64} : (tensor<?x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<?x8xf32>
  %wq = arith.constant dense<3> : tensor<8x4xi8>
  %ws = arith.constant dense<0.5> : tensor<4xf32>
  %w = folio.onnx_node "DequantizeLinear"(%wq, %ws) {opset = 21 : i64, onnx_attributes = {axis = 1 : i64}} : (tensor<8x4xi8>, tensor<4xf32>) -> tensor<8x4xf32>
  %y = folio.onnx_node "MatMul"(%a, %w) {opset = 21 : i64} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Tests that a QDQ pair with per-channel activation scales stays (the
// compiler then refuses the nodes by name).

// CHECK-LABEL: func @activation_qdq_per_channel
// CHECK: folio.onnx_node "QuantizeLinear"
// CHECK: folio.onnx_node "DequantizeLinear"
func.func @activation_qdq_per_channel(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = arith.constant dense<[0.25, 0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5]> : tensor<8xf32>
  %q = folio.onnx_node "QuantizeLinear"(%x, %s) {opset = 21 : i64} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xui8>
  %a = folio.onnx_node "DequantizeLinear"(%q, %s) {opset = 21 : i64} : (tensor<?x8xui8>, tensor<8xf32>) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

// Tests that GatherND with batch_dims 0 and constant indices one coordinate
// deep (torch.export's `x[[i]]`: Falcon's key head out of its fused QKV) is
// Gather on axis 0 with the indices less their last dim, negative ones
// included; deeper indices or a variable index stay GatherND.

// CHECK-LABEL: func @gathernd_one_deep
// CHECK: %[[I:.*]] = arith.constant dense<-2> : tensor<1xi64>
// CHECK: %[[G:.*]] = folio.onnx_node "Gather"(%arg0, %[[I]]) {node_name = "pick_key", onnx_attributes = {axis = 0 : i64}, opset = 18 : i64} : (tensor<6x?x?x8xf32>, tensor<1xi64>) -> tensor<1x?x?x8xf32>
// CHECK: folio.onnx_node "GatherND"(%arg0, %{{.*}}) {{.*}} : (tensor<6x?x?x8xf32>, tensor<1x2xi64>)
// CHECK: folio.onnx_node "GatherND"(%arg0, %arg1)
// CHECK: return %[[G]]
func.func @gathernd_one_deep(%x: tensor<6x?x?x8xf32>, %idx: tensor<1x1xi64>) -> (tensor<1x?x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x?x8xf32>) {
  %c = arith.constant dense<[[-2]]> : tensor<1x1xi64>
  %g = folio.onnx_node "GatherND"(%x, %c) {node_name = "pick_key", opset = 18 : i64} : (tensor<6x?x?x8xf32>, tensor<1x1xi64>) -> tensor<1x?x?x8xf32>
  %c2 = arith.constant dense<[[1, 0]]> : tensor<1x2xi64>
  %g2 = folio.onnx_node "GatherND"(%x, %c2) {opset = 18 : i64} : (tensor<6x?x?x8xf32>, tensor<1x2xi64>) -> tensor<1x?x8xf32>
  %g3 = folio.onnx_node "GatherND"(%x, %idx) {opset = 18 : i64} : (tensor<6x?x?x8xf32>, tensor<1x1xi64>) -> tensor<1x?x?x8xf32>
  return %g, %g2, %g3 : tensor<1x?x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x?x8xf32>
}

// -----

// Tests that a Concat whose other inputs are empty along its axis (partial
// rotary with no channels left to pass through, as Phi-3 exports: the rest
// is a Slice from the head_dim to its end) forwards the non-empty input; one
// with two non-empty inputs stays, and so does one with an input of unknown
// extent.

// CHECK-LABEL: func @concat_empty
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x4x?x8xf32>
// CHECK: %[[C:.*]] = folio.onnx_node "Concat"(%[[X]], %[[X]])
// CHECK: %[[D:.*]] = folio.onnx_node "Concat"(%[[X]], %{{.*}})
// CHECK: return %[[X]], %[[C]], %[[D]]
func.func @concat_empty(%x: tensor<1x4x?x8xf32>, %u: tensor<1x4x?x?xf32>) -> (tensor<1x4x?x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x?xf32>) {
  %start = arith.constant dense<8> : tensor<1xi64>
  %end = arith.constant dense<9223372036854775807> : tensor<1xi64>
  %axis = arith.constant dense<-1> : tensor<1xi64>
  %e = folio.onnx_node "Slice"(%x, %start, %end, %axis) {opset = 17 : i64} : (tensor<1x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x?x0xf32>
  %a = folio.onnx_node "Concat"(%x, %e) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x4x?x8xf32>, tensor<1x4x?x0xf32>) -> tensor<1x4x?x8xf32>
  %b = folio.onnx_node "Concat"(%x, %x) {opset = 17 : i64, onnx_attributes = {axis = 3 : i64}} : (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<1x4x?x16xf32>
  %c = folio.onnx_node "Concat"(%x, %u) {opset = 17 : i64, onnx_attributes = {axis = 3 : i64}} : (tensor<1x4x?x8xf32>, tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  return %a, %b, %c : tensor<1x4x?x8xf32>, tensor<1x4x?x16xf32>, tensor<1x4x?x?xf32>
}
