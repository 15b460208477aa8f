// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-raise-attention

// Tests that a mask letting queries see later keys (Trilu keeping the lower
// triangle hidden instead of the upper) is refused with the first query/key
// pair that differs from causal attention.

func.func @not_causal(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                      %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                      %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %seq = folio.onnx_node "Slice"(%shape, %c1, %c2) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sq = folio.onnx_node "Concat"(%seq, %seq) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %full = folio.onnx_node "ConstantOfShape"(%sq) {opset = 17 : i64, onnx_attributes = {value = dense<0xFF800000> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<?x?xf32>
  %m1 = arith.constant dense<-1> : tensor<i64>
  // expected-error @+1 {{attention at node 'Softmax': the mask is not causal: with batch 1, 0 past and 5 new tokens, query 0 (position 0) sees key 1 (mask from node 'wrong_triangle')}}
  %tri = folio.onnx_node "Trilu"(%full, %m1) {node_name = "wrong_triangle", opset = 17 : i64, onnx_attributes = {upper = 0 : i64}} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%s, %tri) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests that an additive mask holding something other than 0 or a large
// negative number (a bias) is refused.

func.func @bias_mask(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  // expected-error @+1 {{attention at node 'Softmax': the mask holds 0.5, which is neither 0 (keep) nor a large negative number (hide) (mask from node 'Constant')}}
  %bias = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<0.5> : tensor<3x3xf32>}} : () -> tensor<3x3xf32>
  %m = folio.onnx_node "Add"(%s, %bias) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Tests that KV heads repeated with Tile along the heads axis (head h reads
// KV head h mod 2, not h / 2) are refused.

func.func @tile_repeat(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x3x4xf32>) -> tensor<1x4x3x4xf32> {
  %reps = arith.constant dense<[1, 2, 1, 1]> : tensor<4xi64>
  %kr = folio.onnx_node "Tile"(%k, %reps) {node_name = "tile", opset = 17 : i64} : (tensor<1x2x3x4xf32>, tensor<4xi64>) -> tensor<1x4x3x4xf32>
  %kt = folio.onnx_node "Transpose"(%kr) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<1x4x3x4xf32>) -> tensor<1x4x4x3xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x3x3xf32>
  // expected-error @+1 {{attention at node 'attn': node 'tile' repeats KV heads with Tile, which gives query head h the KV head h mod kv_heads; grouped-query attention gives it head h / (heads / kv_heads)}}
  %p = folio.onnx_node "Softmax"(%s) {node_name = "attn", opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %kr) {opset = 17 : i64} : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  return %o : tensor<1x4x3x4xf32>
}

// -----

// Tests that a Softmax over the queries instead of the keys is refused.

func.func @softmax_axis(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  // expected-error @+1 {{attention at node 'Softmax': Softmax must run over the keys (the last axis)}}
  %p = folio.onnx_node "Softmax"(%s) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Tests that scores whose keys are not a Transpose of [B, H, L, D] are
// refused at the QK MatMul.

func.func @keys_not_transposed(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  // expected-error @+1 {{attention at node 'Softmax': the keys of node 'qk' are not a Transpose of [batch, heads, keys, head_dim]}}
  %s = folio.onnx_node "MatMul"(%q, %kt) {node_name = "qk", opset = 17 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = folio.onnx_node "Softmax"(%s) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Tests that the mask analysis reads what ScatterND writes: zeros scattered
// into row 0 of a causal mask let query 0 see later keys.

func.func @scatternd_unmasks_row(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                        %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                        %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                        %v: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %seq = folio.onnx_node "Slice"(%shape, %c1, %c2, %c0) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sq = folio.onnx_node "Concat"(%seq, %seq) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %full = folio.onnx_node "ConstantOfShape"(%sq) {opset = 17 : i64, onnx_attributes = {value = dense<0xFF800000> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<?x?xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %tri = folio.onnx_node "Trilu"(%full, %one) {opset = 17 : i64, onnx_attributes = {upper = 1 : i64}} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %rowshape = folio.onnx_node "Concat"(%c1, %seq) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %zero = folio.onnx_node "ConstantOfShape"(%rowshape) {opset = 17 : i64, onnx_attributes = {value = dense<0.0> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<1x?xf32>
  %at = arith.constant dense<[[0]]> : tensor<1x1xi64>
  // expected-error @+1 {{the mask is not causal: with batch 1, 0 past and 5 new tokens, query 0 (position 0) sees key 1}}
  %mask = folio.onnx_node "ScatterND"(%tri, %at, %zero) {opset = 17 : i64} : (tensor<?x?xf32>, tensor<1x1xi64>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%s, %mask) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests that of two masks applied in turn, a second one holding a bias is
// refused, naming both masks' producers.

func.func @stacked_bias(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %keep = folio.onnx_node "Constant"() {node_name = "causal_keep", opset = 17 : i64, onnx_attributes = {value = dense<[[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>}} : () -> tensor<3x3xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<f32>
  %causal = folio.onnx_node "Where"(%keep, %s, %min) {opset = 17 : i64} : (tensor<3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %bias = folio.onnx_node "Constant"() {node_name = "bias", opset = 17 : i64, onnx_attributes = {value = dense<0.5> : tensor<3x3xf32>}} : () -> tensor<3x3xf32>
  // expected-error @+1 {{attention at node 'Softmax': the mask holds 0.5, which is neither 0 (keep) nor a large negative number (hide) (masks applied in turn, from nodes 'causal_keep', 'bias')}}
  %m = folio.onnx_node "Add"(%causal, %bias) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Tests that keys reshaped through [batch, heads * keys, head_dim] instead of
// [batch * heads, keys, head_dim] before Transpose(0, 2, 1) and the Reshape
// to [batch, heads, head_dim, keys] are not taken for a transpose of the
// keys: the shapes line up, the elements do not.

func.func @keys_folded_across_heads(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %fshape = arith.constant dense<[1, 6, 4]> : tensor<3xi64>
  %kf = folio.onnx_node "Reshape"(%k, %fshape) {opset = 18 : i64} : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<1x6x4xf32>
  %kft = folio.onnx_node "Transpose"(%kf) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1>}} : (tensor<1x6x4xf32>) -> tensor<1x4x6xf32>
  %oshape = arith.constant dense<[1, 2, 4, 3]> : tensor<4xi64>
  %kt = folio.onnx_node "Reshape"(%kft, %oshape) {opset = 18 : i64} : (tensor<1x4x6xf32>, tensor<4xi64>) -> tensor<1x2x4x3xf32>
  // expected-error @+1 {{attention at node 'Softmax': the keys of node 'qk' are not a Transpose of [batch, heads, keys, head_dim]}}
  %s = folio.onnx_node "MatMul"(%q, %kt) {node_name = "qk", opset = 18 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = folio.onnx_node "Softmax"(%s) {opset = 18 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 18 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Tests that opset-23 Attention whose keys are repeated for grouped-query
// attention but whose values have as many heads as the queries is refused:
// the KV heads of the two differ.

func.func @onnx_attention_keys_repeated_alone(%q: tensor<1x2x3x4xf32>, %k1: tensor<1x1x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %a2 = arith.constant dense<2> : tensor<1xi64>
  %eshape = arith.constant dense<[1, 1, 2, 3, 4]> : tensor<5xi64>
  %rshape = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %ku = folio.onnx_node "Unsqueeze"(%k1, %a2) {opset = 23 : i64} : (tensor<1x1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x1x3x4xf32>
  %ke = folio.onnx_node "Expand"(%ku, %eshape) {opset = 23 : i64} : (tensor<1x1x1x3x4xf32>, tensor<5xi64>) -> tensor<1x1x2x3x4xf32>
  %kr = folio.onnx_node "Reshape"(%ke, %rshape) {node_name = "repeat_k", opset = 23 : i64} : (tensor<1x1x2x3x4xf32>, tensor<4xi64>) -> tensor<1x2x3x4xf32>
  // expected-error @+1 {{Attention node 'attn': the keys (from node 'repeat_k') and values (from a graph input) are not repeated alike for grouped-query attention}}
  %o = folio.onnx_node "Attention"(%q, %kr, %v) {node_name = "attn", opset = 23 : i64, onnx_attributes = {is_causal = 1 : i64}} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
