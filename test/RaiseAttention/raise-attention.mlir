// RUN: folio-opt %s --split-input-file --folio-raise-attention | FileCheck %s

// Tests that scores divided by a constant, masked by an additive Trilu causal
// mask (-inf above the diagonal), become causal folio.attention with the
// reciprocal scale, and that the mask subgraph is erased.

// CHECK-LABEL: func @trilu_causal
// CHECK-SAME: (%{{.*}}, %[[Q:.*]]: tensor<?x2x?x4xf32> {{.*}}, %[[K:.*]]: tensor<?x2x?x4xf32> {{.*}}, %[[V:.*]]: tensor<?x2x?x4xf32>
// CHECK-NOT: "Trilu"
// CHECK-NOT: "Softmax"
// CHECK: %[[O:.*]] = folio.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @trilu_causal(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                        %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                        %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                        %v: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %sc = folio.onnx_node "Div"(%s, %two) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %seq = folio.onnx_node "Slice"(%shape, %c1, %c2, %c0) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sq = folio.onnx_node "Concat"(%seq, %seq) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %full = folio.onnx_node "ConstantOfShape"(%sq) {opset = 17 : i64, onnx_attributes = {value = dense<0xFF800000> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<?x?xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %tri = folio.onnx_node "Trilu"(%full, %one) {opset = 17 : i64, onnx_attributes = {upper = 1 : i64}} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%sc, %tri) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests a boolean mask applied with Where(keep, scores, -inf) that combines
// Range/LessOrEqual causality, a sliding window of 3 (Sub/Less) and padding
// from attention_mask over a KV cache, on keys repeated for GQA with
// Unsqueeze/Expand/Reshape: the window is found, attention_mask becomes the
// key padding mask and k/v keep their 1 KV head (the cache Concat stays).

// CHECK-LABEL: func @where_window_gqa
// CHECK-SAME: %[[AM:[a-z0-9]+]]: tensor<?x?xi64> {folio.dim_names = ["batch_size", "total_sequence_length"]
// CHECK: %[[KC:.*]] = folio.onnx_node "Concat"
// CHECK-NOT: "Expand"
// CHECK: folio.attention %{{.*}}, %[[KC]], %[[KC]], %[[AM]] {scale = 1.000000e+00 : f64, sliding_window = 3 : i64} : (tensor<?x2x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x?xi64>) -> tensor<?x2x?x4xf32>
func.func @where_window_gqa(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                            %am: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "total_sequence_length"]},
                            %past: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                            %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                            %knew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> (tensor<?x2x?x4xf32>, tensor<?x1x?x4xf32>) {
  %kc = folio.onnx_node "Concat"(%past, %knew) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %a2 = arith.constant dense<2> : tensor<1xi64>
  %ku = folio.onnx_node "Unsqueeze"(%kc, %a2) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<1xi64>) -> tensor<?x1x1x?x4xf32>
  %kshape = folio.onnx_node "Shape"(%kc) {opset = 17 : i64} : (tensor<?x1x?x4xf32>) -> tensor<4xi64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %i2 = arith.constant dense<2> : tensor<1xi64>
  %i3 = arith.constant dense<3> : tensor<1xi64>
  %b = folio.onnx_node "Slice"(%kshape, %i0, %i1) {opset = 17 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %l = folio.onnx_node "Slice"(%kshape, %i2, %i3) {opset = 17 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %c4 = arith.constant dense<4> : tensor<1xi64>
  %eshape = folio.onnx_node "Concat"(%b, %i1, %i2, %l, %c4) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %ke = folio.onnx_node "Expand"(%ku, %eshape) {opset = 17 : i64} : (tensor<?x1x1x?x4xf32>, tensor<5xi64>) -> tensor<?x1x2x?x4xf32>
  %rshape = folio.onnx_node "Concat"(%b, %i2, %l, %c4) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kr = folio.onnx_node "Reshape"(%ke, %rshape) {opset = 17 : i64} : (tensor<?x1x2x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  %kt = folio.onnx_node "Transpose"(%kr) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  // keep = (k <= q) & (q - k < 3) & attention_mask[k], q = past + arange(S)
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %s2 = arith.constant dense<2> : tensor<i64>
  %seq = folio.onnx_node "Gather"(%ids_shape, %s1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %pshape = folio.onnx_node "Shape"(%past) {opset = 17 : i64} : (tensor<?x1x?x4xf32>) -> tensor<4xi64>
  %plen = folio.onnx_node "Gather"(%pshape, %s2) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %qr = folio.onnx_node "Range"(%s0, %seq, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %qpos = folio.onnx_node "Add"(%qr, %plen) {opset = 17 : i64} : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %amshape = folio.onnx_node "Shape"(%am) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %total = folio.onnx_node "Gather"(%amshape, %s1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %kpos = folio.onnx_node "Range"(%s0, %total, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos2 = folio.onnx_node "Unsqueeze"(%kpos, %i0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %qpos2 = folio.onnx_node "Unsqueeze"(%qpos, %i1) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %causal = folio.onnx_node "LessOrEqual"(%kpos2, %qpos2) {opset = 17 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %dist = folio.onnx_node "Sub"(%qpos2, %kpos2) {opset = 17 : i64} : (tensor<?x1xi64>, tensor<1x?xi64>) -> tensor<?x?xi64>
  %w = arith.constant dense<3> : tensor<i64>
  %near = folio.onnx_node "Less"(%dist, %w) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %band = folio.onnx_node "And"(%causal, %near) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %axes12 = arith.constant dense<[1, 2]> : tensor<2xi64>
  %am4 = folio.onnx_node "Unsqueeze"(%am, %axes12) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x1x1x?xi64>
  %amb = folio.onnx_node "Cast"(%am4) {opset = 17 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %keep = folio.onnx_node "And"(%band, %amb) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<?x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = 3 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %kr) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %kc : tensor<?x2x?x4xf32>, tensor<?x1x?x4xf32>
}

// -----

// Tests that a mask written back into itself with ScatterND (the in-place
// slice assignment of older masking code: here row 0 of a Trilu causal mask
// replaced by itself) is evaluated like the rest of the mask: causal
// folio.attention, and the ScatterND is erased with the mask.

// CHECK-LABEL: func @scatternd_mask
// CHECK-NOT: "ScatterND"
// CHECK: folio.attention
// CHECK-NOT: "ScatterND"
func.func @scatternd_mask(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
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
  %row = folio.onnx_node "Slice"(%tri, %c0, %c1, %c0) {opset = 17 : i64} : (tensor<?x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?xf32>
  %at = arith.constant dense<[[0]]> : tensor<1x1xi64>
  %mask = folio.onnx_node "ScatterND"(%tri, %at, %row) {opset = 17 : i64} : (tensor<?x?xf32>, tensor<1x1xi64>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%s, %mask) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests two masks applied in turn, as GPT-2's eager attention does: a
// causal Where(keep, scores, finfo.min), then an additive padding mask from
// attention_mask. Together they are causal attention with key padding.

// CHECK-LABEL: func @stacked_masks
// CHECK-SAME: %[[AM:[a-z0-9]+]]: tensor<?x?xi64> {folio.dim_names = ["batch_size", "total_sequence_length"]
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x2x?x4xf32>
// CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<?x2x?x4xf32>
// CHECK-NOT: "Softmax"
// CHECK: %[[O:.*]] = folio.attention %[[Q]], %[[K]], %[[K]], %[[AM]] {scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[O]]
func.func @stacked_masks(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                         %am: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "total_sequence_length"]},
                         %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                         %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %seq = folio.onnx_node "Gather"(%shape, %s1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %r = folio.onnx_node "Range"(%s0, %seq, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos = folio.onnx_node "Unsqueeze"(%r, %i0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %qpos = folio.onnx_node "Unsqueeze"(%r, %i1) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %keep = folio.onnx_node "LessOrEqual"(%kpos, %qpos) {opset = 17 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %min = arith.constant dense<-3.40282347E+38> : tensor<f32>
  %causal = folio.onnx_node "Where"(%keep, %s, %min) {node_name = "causal", opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %axes12 = arith.constant dense<[1, 2]> : tensor<2xi64>
  %am4 = folio.onnx_node "Unsqueeze"(%am, %axes12) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x1x1x?xi64>
  %amf = folio.onnx_node "Cast"(%am4) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xf32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %inv = folio.onnx_node "Sub"(%one, %amf) {opset = 17 : i64} : (tensor<f32>, tensor<?x1x1x?xf32>) -> tensor<?x1x1x?xf32>
  %pad = folio.onnx_node "Mul"(%inv, %min) {opset = 17 : i64} : (tensor<?x1x1x?xf32>, tensor<f32>) -> tensor<?x1x1x?xf32>
  %m = folio.onnx_node "Add"(%causal, %pad) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests the guard newer SDPA exports put between Softmax and the value
// MatMul, Where(IsNaN(p), 0, p) for fully masked rows: with the mask proven
// causal every query sees itself, so the guard changes nothing and is
// dropped with the rest.

// CHECK-LABEL: func @nan_guard
// CHECK-SAME: (%{{.*}}, %[[Q:.*]]: tensor<?x2x?x4xf32> {{.*}}, %[[K:.*]]: tensor<?x2x?x4xf32> {{.*}}, %[[V:.*]]: tensor<?x2x?x4xf32>
// CHECK-NOT: "IsNaN"
// CHECK: %[[O:.*]] = folio.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @nan_guard(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                     %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                     %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                     %v: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %sc = folio.onnx_node "Div"(%s, %two) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %seq = folio.onnx_node "Slice"(%shape, %c1, %c2, %c0) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sq = folio.onnx_node "Concat"(%seq, %seq) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %full = folio.onnx_node "ConstantOfShape"(%sq) {opset = 17 : i64, onnx_attributes = {value = dense<0xFF800000> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<?x?xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %tri = folio.onnx_node "Trilu"(%full, %one) {opset = 17 : i64, onnx_attributes = {upper = 1 : i64}} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%sc, %tri) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %nan = folio.onnx_node "IsNaN"(%p) {opset = 17 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xi1>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %g = folio.onnx_node "Where"(%nan, %zero, %p) {opset = 17 : i64} : (tensor<?x2x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%g, %v) {opset = 17 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}
// -----

// Tests that a padding mask looked up with GatherND (torch.export's
// mask[batch_idx, kv_idx], indices [batch, 1, 1, total, 2] from Range and
// Expand) is evaluated like the rest of the mask: causal folio.attention
// with the attention_mask, and the GatherND is erased with the mask.

// CHECK-LABEL: func @gathernd_padding_mask
// CHECK-NOT: "GatherND"
// CHECK: folio.attention %arg2, %arg3, %arg4, %arg1 {scale = 1.000000e+00 : f64}
// CHECK-NOT: "GatherND"
func.func @gathernd_padding_mask(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                 %am: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "sequence_length"]},
                                 %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                 %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                 %v: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 18 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%am) {opset = 18 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %i2 = arith.constant dense<2> : tensor<1xi64>
  %im1 = arith.constant dense<-1> : tensor<1xi64>
  %bsz = folio.onnx_node "Gather"(%shape, %s0) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %tot = folio.onnx_node "Gather"(%shape, %s1) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %br = folio.onnx_node "Range"(%s0, %bsz, %s1) {opset = 18 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kr = folio.onnx_node "Range"(%s0, %tot, %s1) {opset = 18 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %bshape = arith.constant dense<[-1, 1, 1, 1]> : tensor<4xi64>
  %kshape = arith.constant dense<[1, 1, 1, -1]> : tensor<4xi64>
  %b4 = folio.onnx_node "Reshape"(%br, %bshape) {opset = 18 : i64} : (tensor<?xi64>, tensor<4xi64>) -> tensor<?x1x1x1xi64>
  %k4 = folio.onnx_node "Reshape"(%kr, %kshape) {opset = 18 : i64} : (tensor<?xi64>, tensor<4xi64>) -> tensor<1x1x1x?xi64>
  %b1 = folio.onnx_node "Slice"(%shape, %i0, %i1) {opset = 18 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %t1 = folio.onnx_node "Slice"(%shape, %i1, %i2) {opset = 18 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %eshape = folio.onnx_node "Concat"(%b1, %i1, %i1, %t1) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %be = folio.onnx_node "Expand"(%b4, %eshape) {opset = 18 : i64} : (tensor<?x1x1x1xi64>, tensor<4xi64>) -> tensor<?x1x1x?xi64>
  %ke = folio.onnx_node "Expand"(%k4, %eshape) {opset = 18 : i64} : (tensor<1x1x1x?xi64>, tensor<4xi64>) -> tensor<?x1x1x?xi64>
  %bu = folio.onnx_node "Unsqueeze"(%be, %im1) {opset = 18 : i64} : (tensor<?x1x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?x1xi64>
  %ku = folio.onnx_node "Unsqueeze"(%ke, %im1) {opset = 18 : i64} : (tensor<?x1x1x?xi64>, tensor<1xi64>) -> tensor<?x1x1x?x1xi64>
  %idx = folio.onnx_node "Concat"(%bu, %ku) {opset = 18 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x1x?x1xi64>, tensor<?x1x1x?x1xi64>) -> tensor<?x1x1x?x2xi64>
  %amb = folio.onnx_node "Cast"(%am) {opset = 18 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %pad = folio.onnx_node "GatherND"(%amb, %idx) {opset = 18 : i64} : (tensor<?x?xi1>, tensor<?x1x1x?x2xi64>) -> tensor<?x1x1x?xi1>
  %qr = folio.onnx_node "Range"(%s0, %tot, %s1) {opset = 18 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %q2 = folio.onnx_node "Unsqueeze"(%qr, %i1) {opset = 18 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %k2 = folio.onnx_node "Unsqueeze"(%kr, %i0) {opset = 18 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = folio.onnx_node "LessOrEqual"(%k2, %q2) {opset = 18 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %keep = folio.onnx_node "And"(%causal, %pad) {opset = 18 : i64} : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 18 : i64} : (tensor<?x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 18 : i64, onnx_attributes = {axis = 3 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 18 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// The same padding mask looked up with GatherND over batch_dims = 1: each
// sequence's row of the attention_mask indexed by the key positions
// (indices [batch, total, 1]).

// CHECK-LABEL: func @gathernd_batch_dims_padding_mask
// CHECK-NOT: "GatherND"
// CHECK: folio.attention %arg2, %arg3, %arg4, %arg1 {scale = 1.000000e+00 : f64}
// CHECK-NOT: "GatherND"
func.func @gathernd_batch_dims_padding_mask(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                 %am: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "sequence_length"]},
                                 %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                 %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                 %v: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 18 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%am) {opset = 18 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %i2 = arith.constant dense<2> : tensor<1xi64>
  %im1 = arith.constant dense<-1> : tensor<1xi64>
  %bsz = folio.onnx_node "Gather"(%shape, %s0) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %tot = folio.onnx_node "Gather"(%shape, %s1) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %br = folio.onnx_node "Range"(%s0, %bsz, %s1) {opset = 18 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kr = folio.onnx_node "Range"(%s0, %tot, %s1) {opset = 18 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %be = folio.onnx_node "Expand"(%kr, %shape) {opset = 18 : i64} : (tensor<?xi64>, tensor<2xi64>) -> tensor<?x?xi64>
  %idx = folio.onnx_node "Unsqueeze"(%be, %im1) {opset = 18 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %amb = folio.onnx_node "Cast"(%am) {opset = 18 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %pad2 = folio.onnx_node "GatherND"(%amb, %idx) {opset = 18 : i64, onnx_attributes = {batch_dims = 1 : i64}} : (tensor<?x?xi1>, tensor<?x?x1xi64>) -> tensor<?x?xi1>
  %pshape = arith.constant dense<[0, 1, 1, -1]> : tensor<4xi64>
  %pad = folio.onnx_node "Reshape"(%pad2, %pshape) {opset = 18 : i64} : (tensor<?x?xi1>, tensor<4xi64>) -> tensor<?x1x1x?xi1>
  %qr = folio.onnx_node "Range"(%s0, %tot, %s1) {opset = 18 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %q2 = folio.onnx_node "Unsqueeze"(%qr, %i1) {opset = 18 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %k2 = folio.onnx_node "Unsqueeze"(%kr, %i0) {opset = 18 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = folio.onnx_node "LessOrEqual"(%k2, %q2) {opset = 18 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %keep = folio.onnx_node "And"(%causal, %pad) {opset = 18 : i64} : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 18 : i64} : (tensor<?x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 18 : i64, onnx_attributes = {axis = 3 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 18 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests keys transposed through three dims, as torchlib's SDPA
// decomposition writes them at opset 18: Reshape(k, [-1, keys, head_dim]),
// Transpose(0, 2, 1), Reshape back to [batch, heads, head_dim, keys], with
// sqrt(scale) on q and on the transposed keys. folio.attention reads k itself
// at scale 0.5, and the three nodes are erased.

// CHECK-LABEL: func @folded_key_transpose
// CHECK-SAME: (%{{.*}}, %[[Q:.*]]: tensor<?x2x?x4xf32> {{.*}}, %[[K:.*]]: tensor<?x2x?x4xf32> {{.*}}, %[[V:.*]]: tensor<?x2x?x4xf32>
// CHECK-NOT: "Reshape"
// CHECK: %[[O:.*]] = folio.attention %[[Q]], %[[K]], %[[V]] {scale = 0.49999998
// CHECK-NEXT: return %[[O]]
func.func @folded_key_transpose(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                %k: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                %v: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %kshape = folio.onnx_node "Shape"(%k) {opset = 18 : i64} : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c3 = arith.constant dense<3> : tensor<1xi64>
  %c4 = arith.constant dense<4> : tensor<1xi64>
  %cm1 = arith.constant dense<-1> : tensor<1xi64>
  %bh = folio.onnx_node "Slice"(%kshape, %c0, %c2) {opset = 18 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %l = folio.onnx_node "Slice"(%kshape, %c2, %c3) {opset = 18 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %d = folio.onnx_node "Slice"(%kshape, %c3, %c4) {opset = 18 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %fshape = folio.onnx_node "Concat"(%cm1, %l, %d) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %kf = folio.onnx_node "Reshape"(%k, %fshape) {opset = 18 : i64} : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %kft = folio.onnx_node "Transpose"(%kf) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1>}} : (tensor<?x?x4xf32>) -> tensor<?x4x?xf32>
  %oshape = folio.onnx_node "Concat"(%bh, %d, %l) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kt = folio.onnx_node "Reshape"(%kft, %oshape) {opset = 18 : i64} : (tensor<?x4x?xf32>, tensor<4xi64>) -> tensor<?x2x4x?xf32>
  %root = arith.constant dense<0.70710677> : tensor<f32>
  %qs = folio.onnx_node "Mul"(%q, %root) {opset = 18 : i64} : (tensor<?x2x?x4xf32>, tensor<f32>) -> tensor<?x2x?x4xf32>
  %kts = folio.onnx_node "Mul"(%kt, %root) {opset = 18 : i64} : (tensor<?x2x4x?xf32>, tensor<f32>) -> tensor<?x2x4x?xf32>
  %s = folio.onnx_node "MatMul"(%qs, %kts) {opset = 18 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %shape = folio.onnx_node "Shape"(%ids) {opset = 18 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = folio.onnx_node "Slice"(%shape, %c1, %c2, %c0) {opset = 18 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %sq = folio.onnx_node "Concat"(%seq, %seq) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %full = folio.onnx_node "ConstantOfShape"(%sq) {opset = 18 : i64, onnx_attributes = {value = dense<0xFF800000> : tensor<1xf32>}} : (tensor<2xi64>) -> tensor<?x?xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %tri = folio.onnx_node "Trilu"(%full, %one) {opset = 18 : i64, onnx_attributes = {upper = 1 : i64}} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%s, %tri) {opset = 18 : i64} : (tensor<?x2x?x?xf32>, tensor<?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 18 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %v) {opset = 18 : i64} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Tests opset-23 Attention fed keys and values repeated for grouped-query
// attention (Unsqueeze -> Expand -> Reshape of the cache concat, as torchlib
// writes transformers' repeat_kv): folio.attention reads the concat's 1 KV
// head, so that page-kv pages it, and the repeat is erased.

// CHECK-LABEL: func @onnx_attention_repeated_kv
// CHECK: %[[KC:.*]] = folio.onnx_node "Concat"
// CHECK: %[[VC:.*]] = folio.onnx_node "Concat"
// CHECK-NOT: "Expand"
// CHECK: folio.attention %{{.*}}, %[[KC]], %[[VC]] {scale = 5.000000e-01 : f64} : (tensor<?x2x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x2x?x4xf32>
func.func @onnx_attention_repeated_kv(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                      %pk: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                                      %pv: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.value", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                                      %q: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                      %knew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                      %vnew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> (tensor<?x2x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) {
  %kc = folio.onnx_node "Concat"(%pk, %knew) {opset = 23 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %vc = folio.onnx_node "Concat"(%pv, %vnew) {opset = 23 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %a2 = arith.constant dense<2> : tensor<1xi64>
  %kshape = folio.onnx_node "Shape"(%kc) {opset = 23 : i64} : (tensor<?x1x?x4xf32>) -> tensor<4xi64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %i2 = arith.constant dense<2> : tensor<1xi64>
  %i3 = arith.constant dense<3> : tensor<1xi64>
  %c4 = arith.constant dense<4> : tensor<1xi64>
  %b = folio.onnx_node "Slice"(%kshape, %i0, %i1) {opset = 23 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %l = folio.onnx_node "Slice"(%kshape, %i2, %i3) {opset = 23 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %eshape = folio.onnx_node "Concat"(%b, %i1, %i2, %l, %c4) {opset = 23 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %rshape = folio.onnx_node "Concat"(%b, %i2, %l, %c4) {opset = 23 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %ku = folio.onnx_node "Unsqueeze"(%kc, %a2) {opset = 23 : i64} : (tensor<?x1x?x4xf32>, tensor<1xi64>) -> tensor<?x1x1x?x4xf32>
  %ke = folio.onnx_node "Expand"(%ku, %eshape) {opset = 23 : i64} : (tensor<?x1x1x?x4xf32>, tensor<5xi64>) -> tensor<?x1x2x?x4xf32>
  %kr = folio.onnx_node "Reshape"(%ke, %rshape) {opset = 23 : i64} : (tensor<?x1x2x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  %vu = folio.onnx_node "Unsqueeze"(%vc, %a2) {opset = 23 : i64} : (tensor<?x1x?x4xf32>, tensor<1xi64>) -> tensor<?x1x1x?x4xf32>
  %ve = folio.onnx_node "Expand"(%vu, %eshape) {opset = 23 : i64} : (tensor<?x1x1x?x4xf32>, tensor<5xi64>) -> tensor<?x1x2x?x4xf32>
  %vr = folio.onnx_node "Reshape"(%ve, %rshape) {opset = 23 : i64} : (tensor<?x1x2x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  %o = folio.onnx_node "Attention"(%q, %kr, %vr) {opset = 23 : i64, onnx_attributes = {is_causal = 1 : i64, scale = 5.000000e-01 : f32}} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %kc, %vc : tensor<?x2x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}
