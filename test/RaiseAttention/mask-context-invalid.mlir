// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-raise-attention

// Tests that a causal mask sliced from a fixed 16 x 16 buffer, which cannot
// be built for the 23 keys of the longest mandatory sample, is refused with
// the length it was proven for: too short to serve the model at all.

func.func @cached_buffer_16(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                            %past: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                            %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                            %knew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) {
  %kc = folio.onnx_node "Concat"(%past, %knew) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %kt = folio.onnx_node "Transpose"(%kc) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  %bshape = arith.constant dense<[1, 1, 16, 16]> : tensor<4xi64>
  %ones = folio.onnx_node "ConstantOfShape"(%bshape) {opset = 17 : i64, onnx_attributes = {value = dense<1.0> : tensor<1xf32>}} : (tensor<4xi64>) -> tensor<1x1x16x16xf32>
  %s0 = arith.constant dense<0> : tensor<i64>
  %bias = folio.onnx_node "Trilu"(%ones, %s0) {opset = 17 : i64, onnx_attributes = {upper = 0 : i64}} : (tensor<1x1x16x16xf32>, tensor<i64>) -> tensor<1x1x16x16xf32>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %i2 = arith.constant dense<2> : tensor<1xi64>
  %i3 = arith.constant dense<3> : tensor<1xi64>
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = folio.onnx_node "Slice"(%ids_shape, %i1, %i2) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %kshape = folio.onnx_node "Shape"(%kc) {opset = 17 : i64} : (tensor<?x1x?x4xf32>) -> tensor<4xi64>
  %total = folio.onnx_node "Slice"(%kshape, %i2, %i3) {opset = 17 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %start = folio.onnx_node "Sub"(%total, %seq) {opset = 17 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %starts = folio.onnx_node "Concat"(%start, %i0) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %ends = folio.onnx_node "Concat"(%total, %total) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %axes = arith.constant dense<[2, 3]> : tensor<2xi64>
  %window = folio.onnx_node "Slice"(%bias, %starts, %ends, %axes) {opset = 17 : i64} : (tensor<1x1x16x16xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x?x?xf32>
  // expected-error @+1 {{attention at node 'Softmax': the mask has shape [1, 1, 0, 16], which does not broadcast to the scores [1, heads, 3, 23] with batch 1, 20 past and 3 new tokens; it was proven causal only up to 12 tokens, fewer than the 23 every mask must be proven for (mask from node 'causal_buffer')}}
  %keep = folio.onnx_node "Cast"(%window) {node_name = "causal_buffer", opset = 17 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<1x1x?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %kc) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o, %kc : tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}
