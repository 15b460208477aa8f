// RUN: folio-opt %s --split-input-file --folio-lower-onnx | FileCheck %s

// Tests that a Reshape whose target is computed at run time (Shape ->
// Gather -> Unsqueeze -> Concat) becomes a folio.reshape to the shape
// inference proved, with only the token dim dynamic, and that the shape
// chain is gone.

// CHECK-LABEL: func @reshape_from_shape_chain
// CHECK-NOT: folio.onnx_node
// CHECK: %[[R:.*]] = folio.reshape %arg0 : tensor<1x?x32xf32> to tensor<1x?x4x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_from_shape_chain(%x: tensor<1x?x32xf32> {folio.dim_names = ["", "num_tokens", ""]}) -> tensor<1x?x4x8xf32> {
  %s = folio.onnx_node "Shape"(%x) {opset = 17 : i64} : (tensor<1x?x32xf32>) -> tensor<3xi64>
  %i = arith.constant dense<1> : tensor<i64>
  %t = folio.onnx_node "Gather"(%s, %i) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %z = arith.constant dense<0> : tensor<1xi64>
  %u = folio.onnx_node "Unsqueeze"(%t, %z) {opset = 17 : i64} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %one = arith.constant dense<1> : tensor<1xi64>
  %hd = arith.constant dense<[4, 8]> : tensor<2xi64>
  %c = folio.onnx_node "Concat"(%one, %u, %hd) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  %r = folio.onnx_node "Reshape"(%x, %c) {opset = 17 : i64} : (tensor<1x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
  %cast = tensor.cast %r : tensor<?x?x4x8xf32> to tensor<1x?x4x8xf32>
  return %cast : tensor<1x?x4x8xf32>
}

// -----

// Tests that a written-out GELU (tanh form) becomes folio.binary and
// folio.unary ops with refined types, and a residual add folio.binary add.

// CHECK-LABEL: func @gelu_tanh
// CHECK: folio.binary mul %arg0, %{{.*}} : (tensor<1x?x16xf32>, tensor<f32>) -> tensor<1x?x16xf32>
// CHECK: folio.binary pow %arg0, %{{.*}} : (tensor<1x?x16xf32>, tensor<f32>) -> tensor<1x?x16xf32>
// CHECK: folio.unary tanh
// CHECK: folio.binary add
// CHECK-NOT: folio.onnx_node
func.func @gelu_tanh(%x: tensor<1x?x16xf32> {folio.dim_names = ["", "num_tokens", ""]}) -> tensor<1x?x16xf32> {
  %half = arith.constant dense<5.000000e-01> : tensor<f32>
  %three = arith.constant dense<3.000000e+00> : tensor<f32>
  %h = folio.onnx_node "Mul"(%x, %half) {opset = 17 : i64} : (tensor<1x?x16xf32>, tensor<f32>) -> tensor<?x?x16xf32>
  %p = folio.onnx_node "Pow"(%x, %three) {opset = 17 : i64} : (tensor<1x?x16xf32>, tensor<f32>) -> tensor<?x?x16xf32>
  %t = folio.onnx_node "Tanh"(%p) {opset = 17 : i64} : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %a = folio.onnx_node "Add"(%h, %t) {opset = 17 : i64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %r = tensor.cast %a : tensor<?x?x16xf32> to tensor<1x?x16xf32>
  return %r : tensor<1x?x16xf32>
}

// -----

// Tests that Split becomes one folio.slice per part, Slice a folio.slice,
// and that Transpose and Cast lower.

// CHECK-LABEL: func @split_slice_transpose_cast
// CHECK: folio.slice %arg0 {axis = 2 : i64, size = 32 : i64, start = 0 : i64}
// CHECK: folio.slice %arg0 {axis = 2 : i64, size = 64 : i64, start = 32 : i64}
// CHECK: folio.slice %{{.*}} {axis = 2 : i64, size = 16 : i64, start = 8 : i64} : (tensor<1x?x64xf32>) -> tensor<1x?x16xf32>
// CHECK: folio.transpose %{{.*}} [1, 0, 2] : (tensor<1x?x16xf32>) -> tensor<?x1x16xf32>
// CHECK: folio.cast %arg1 : tensor<?xi32> to tensor<?xi64>
func.func @split_slice_transpose_cast(%x: tensor<1x?x96xf32> {folio.dim_names = ["", "num_tokens", ""]}, %ids: tensor<?xi32> {folio.dim_names = ["num_tokens"]}) -> (tensor<1x?x32xf32>, tensor<?x1x16xf32>, tensor<?xi64>) {
  %sizes = arith.constant dense<[32, 64]> : tensor<2xi64>
  %a, %b = folio.onnx_node "Split"(%x, %sizes) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<1x?x96xf32>, tensor<2xi64>) -> (tensor<1x?x32xf32>, tensor<1x?x64xf32>)
  %st = arith.constant dense<8> : tensor<1xi64>
  %en = arith.constant dense<-40> : tensor<1xi64>
  %ax = arith.constant dense<2> : tensor<1xi64>
  %s = folio.onnx_node "Slice"(%b, %st, %en, %ax) {opset = 17 : i64} : (tensor<1x?x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x16xf32>
  %t = folio.onnx_node "Transpose"(%s) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 1, 0, 2>}} : (tensor<1x?x16xf32>) -> tensor<?x1x16xf32>
  %c = folio.onnx_node "Cast"(%ids) {opset = 17 : i64, onnx_attributes = {to = 7 : i64}} : (tensor<?xi32>) -> tensor<?xi64>
  return %a, %t, %c : tensor<1x?x32xf32>, tensor<?x1x16xf32>, tensor<?xi64>
}

// -----

// Tests that page-kv's tensor views and integer casts become folio ops.

// CHECK-LABEL: func @tensor_views
// CHECK: %[[C:.*]] = folio.cast %arg0 : tensor<?xi32> to tensor<?xi64>
// CHECK: folio.reshape %[[C]] : tensor<?xi64> to tensor<1x?xi64>
// CHECK: folio.reshape %arg1 : tensor<1x?x4x8xf32> to tensor<?x4x8xf32>
// CHECK-NOT: tensor.
// CHECK-NOT: arith.extsi
func.func @tensor_views(%tok: tensor<?xi32> {folio.dim_names = ["num_tokens"]}, %x: tensor<1x?x4x8xf32> {folio.dim_names = ["", "num_tokens", "", ""]}) -> (tensor<1x?xi64>, tensor<?x4x8xf32>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %tok, %c0 : tensor<?xi32>
  %w = arith.extsi %tok : tensor<?xi32> to tensor<?xi64>
  %e = tensor.expand_shape %w [[0, 1]] output_shape [1, %d] : tensor<?xi64> into tensor<1x?xi64>
  %cast = tensor.cast %x : tensor<1x?x4x8xf32> to tensor<?x?x4x8xf32>
  %cast2 = tensor.cast %cast : tensor<?x?x4x8xf32> to tensor<1x?x4x8xf32>
  %col = tensor.collapse_shape %cast2 [[0, 1], [2], [3]] : tensor<1x?x4x8xf32> into tensor<?x4x8xf32>
  return %e, %col : tensor<1x?xi64>, tensor<?x4x8xf32>
}

// -----

// Tests that what cannot be lowered stays, carrying why: a strided Slice,
// an op without a lowering, and shape arithmetic still in use.

// CHECK-LABEL: func @not_lowered
// CHECK: folio.onnx_node "Slice"{{.*}}folio.lowering_error = "slices with step 2; folio.slice takes contiguous ranges (step 1)"
// CHECK: folio.onnx_node "Softmax"{{.*}}folio.lowering_error = "Folio has no lowering for Softmax in ai.onnx; it lowers Abs, Add,
// CHECK: folio.onnx_node "Shape"{{.*}}folio.lowering_error = "it computes an integer tensor (a shape or index) at run time that Folio could not fold into static shapes"
func.func @not_lowered(%x: tensor<1x?x8xf32> {folio.dim_names = ["", "num_tokens", ""]}) -> (tensor<1x?x4xf32>, tensor<1x?x8xf32>, tensor<3xi64>) {
  %st = arith.constant dense<0> : tensor<1xi64>
  %en = arith.constant dense<8> : tensor<1xi64>
  %ax = arith.constant dense<2> : tensor<1xi64>
  %sp = arith.constant dense<2> : tensor<1xi64>
  %s = folio.onnx_node "Slice"(%x, %st, %en, %ax, %sp) {opset = 17 : i64} : (tensor<1x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x4xf32>
  %m = folio.onnx_node "Softmax"(%x) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %shape = folio.onnx_node "Shape"(%x) {opset = 17 : i64} : (tensor<1x?x8xf32>) -> tensor<3xi64>
  return %s, %m, %shape : tensor<1x?x4xf32>, tensor<1x?x8xf32>, tensor<3xi64>
}

// -----

// Tests that a Gather of constant, contiguous indices along a static dim
// (Falcon's fused_qkv[..., [-2], :]) becomes a folio.slice, reshaped to the
// indices' shape for a scalar index, and that run-time indices stay with a
// reason.

// CHECK-LABEL: func @gather_as_slice
// CHECK: folio.slice %arg0 {axis = 2 : i64, size = 1 : i64, start = 4 : i64}
// CHECK: %[[V:.*]] = folio.slice %arg0 {axis = 2 : i64, size = 1 : i64, start = 5 : i64}
// CHECK: folio.reshape %[[V]] : tensor<1x?x1x8xf32> to tensor<1x?x8xf32>
// CHECK: folio.onnx_node "Gather"{{.*}}folio.lowering_error = "gathers by indices computed at run time
func.func @gather_as_slice(%x: tensor<1x?x6x8xf32> {folio.dim_names = ["", "num_tokens", "", ""]}, %idx: tensor<1xi64>) -> (tensor<1x?x1x8xf32>, tensor<1x?x8xf32>, tensor<1x?x1x8xf32>) {
  %k = arith.constant dense<-2> : tensor<1xi64>
  %g = folio.onnx_node "Gather"(%x, %k) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<1x?x6x8xf32>, tensor<1xi64>) -> tensor<1x?x1x8xf32>
  %v = arith.constant dense<5> : tensor<i64>
  %h = folio.onnx_node "Gather"(%x, %v) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<1x?x6x8xf32>, tensor<i64>) -> tensor<1x?x8xf32>
  %r = folio.onnx_node "Gather"(%x, %idx) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<1x?x6x8xf32>, tensor<1xi64>) -> tensor<1x?x1x8xf32>
  return %g, %h, %r : tensor<1x?x1x8xf32>, tensor<1x?x8xf32>, tensor<1x?x1x8xf32>
}

// -----

// Tests that Gelu (opset 20) outside a gated MLP lowers to its formula:
// x * 0.5 * (1 + erf(x / sqrt(2))), and with approximate = "tanh"
// x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

// CHECK-LABEL: func @gelu
// CHECK-DAG: %[[C:.*]] = arith.constant dense<0.797884583> : tensor<f32>
// CHECK-DAG: %[[K:.*]] = arith.constant dense<4.471500e-02> : tensor<f32>
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[RSQRT2:.*]] = arith.constant dense<0.707106769> : tensor<f32>
// CHECK: %[[S:.*]] = folio.binary mul %arg0, %[[RSQRT2]]
// CHECK: %[[E:.*]] = folio.unary erf %[[S]]
// CHECK: %[[H:.*]] = folio.binary mul %arg0, %[[HALF]]
// CHECK: %[[P:.*]] = folio.binary add %[[E]], %[[ONE]]
// CHECK: %[[A:.*]] = folio.binary mul %[[H]], %[[P]]
// CHECK: %[[X2:.*]] = folio.binary mul %arg0, %arg0
// CHECK: %[[X3:.*]] = folio.binary mul %[[X2]], %arg0
// CHECK: %[[KX3:.*]] = folio.binary mul %[[X3]], %[[K]]
// CHECK: %[[IN:.*]] = folio.binary add %arg0, %[[KX3]]
// CHECK: %[[SC:.*]] = folio.binary mul %[[IN]], %[[C]]
// CHECK: %[[T:.*]] = folio.unary tanh %[[SC]]
// CHECK: %[[H2:.*]] = folio.binary mul %arg0, %[[HALF]]
// CHECK: %[[P2:.*]] = folio.binary add %[[T]], %[[ONE]]
// CHECK: %[[B:.*]] = folio.binary mul %[[H2]], %[[P2]]
// CHECK: return %[[A]], %[[B]]
func.func @gelu(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %a = folio.onnx_node "Gelu"(%x) {opset = 20 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %b = folio.onnx_node "Gelu"(%x) {opset = 20 : i64, onnx_attributes = {approximate = "tanh"}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
}
