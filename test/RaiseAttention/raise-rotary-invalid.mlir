// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-raise-rotary

// Tests that a rotate_half pattern whose "cos" and "sin" are not a rotation
// (cos = sin = 1) is refused at its Add.

func.func @not_a_rotation(%pos: tensor<?x?xi64> {folio.onnx_name = "position_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                          %x: tensor<?x1x?x2xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x1x?x2xf32> {
  %a1 = arith.constant dense<1> : tensor<1xi64>
  %pu = folio.onnx_node "Unsqueeze"(%pos, %a1) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %pf = folio.onnx_node "Cast"(%pu) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<?x1x?xi64>) -> tensor<?x1x?xf32>
  %z = folio.onnx_node "Mul"(%pf, %pf) {opset = 17 : i64} : (tensor<?x1x?xf32>, tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
  %e = folio.onnx_node "Exp"(%z) {opset = 17 : i64} : (tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
  %u = folio.onnx_node "Unsqueeze"(%e, %a1) {opset = 17 : i64} : (tensor<?x1x?xf32>, tensor<1xi64>) -> tensor<?x1x1x?xf32>
  %t = folio.onnx_node "Transpose"(%u) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x1x?xf32>) -> tensor<?x1x?x1xf32>
  %c = folio.onnx_node "Concat"(%t, %t) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x1xf32>, tensor<?x1x?x1xf32>) -> tensor<?x1x?x2xf32>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %c3 = arith.constant dense<3> : tensor<1xi64>
  %cmax = arith.constant dense<9223372036854775807> : tensor<1xi64>
  %x1 = folio.onnx_node "Slice"(%x, %c0, %a1, %c3) {opset = 17 : i64} : (tensor<?x1x?x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x1x?x1xf32>
  %x2 = folio.onnx_node "Slice"(%x, %a1, %cmax, %c3) {opset = 17 : i64} : (tensor<?x1x?x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x1x?x1xf32>
  %nx2 = folio.onnx_node "Neg"(%x2) {opset = 17 : i64} : (tensor<?x1x?x1xf32>) -> tensor<?x1x?x1xf32>
  %rot = folio.onnx_node "Concat"(%nx2, %x1) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x1xf32>, tensor<?x1x?x1xf32>) -> tensor<?x1x?x2xf32>
  %a = folio.onnx_node "Mul"(%x, %c) {opset = 17 : i64} : (tensor<?x1x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x1x?x2xf32>
  %b = folio.onnx_node "Mul"(%rot, %c) {opset = 17 : i64} : (tensor<?x1x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x1x?x2xf32>
  // expected-error @+1 {{rotary embedding at node 'rope': its cos/sin: cos/sin of pair 0 at position 0 are 1 and 1, not a rotation (cos^2 + sin^2 != 1)}}
  %y = folio.onnx_node "Add"(%a, %b) {node_name = "rope", opset = 17 : i64} : (tensor<?x1x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x1x?x2xf32>
  return %y : tensor<?x1x?x2xf32>
}

// -----

// Tests that com.microsoft RotaryEmbedding with a scalar position offset
// instead of [batch, seq] position ids is refused.

func.func @offset_positions(%x: tensor<1x3x8xf32>, %pos: tensor<1xi64>) -> tensor<1x3x8xf32> {
  %cos = arith.constant dense<[[1.0, 1.0], [0.540302306, 0.995004165]]> : tensor<2x2xf32>
  %sin = arith.constant dense<[[0.0, 0.0], [0.841470985, 0.0998334166]]> : tensor<2x2xf32>
  // expected-error @+1 {{com.microsoft.RotaryEmbedding node 'RotaryEmbedding': position_ids must be [batch, seq]; a scalar position offset is not supported}}
  %y = folio.onnx_node "RotaryEmbedding"(%x, %pos, %cos, %sin) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 2 : i64}} : (tensor<1x3x8xf32>, tensor<1xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Tests that packed batching in com.microsoft RotaryEmbedding is refused.

func.func @packed(%x: tensor<1x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x3x8xf32> {
  %cos = arith.constant dense<[[1.0, 1.0], [0.540302306, 0.995004165]]> : tensor<2x2xf32>
  %sin = arith.constant dense<[[0.0, 0.0], [0.841470985, 0.0998334166]]> : tensor<2x2xf32>
  // expected-error @+1 {{com.microsoft.RotaryEmbedding node 'RotaryEmbedding': packed batching and a scale other than 1 are not supported}}
  %y = folio.onnx_node "RotaryEmbedding"(%x, %pos, %cos, %sin) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 2 : i64, is_packed_batching = 1 : i64}} : (tensor<1x3x8xf32>, tensor<1x3xi64>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}
