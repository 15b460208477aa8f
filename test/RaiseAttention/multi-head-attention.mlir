// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-raise-attention | FileCheck %s

// Tests com.microsoft MultiHeadAttention taking the past itself (as ONNX
// Runtime GenAI's builder writes it for fp16 CPU models without GQA): q/k/v
// [B, S, 32] split into 2 heads of 16, the present Concat(past, k), the
// additive attention_bias evaluated as causal with key padding. The mask
// reads the past length off past_key, whose head size is only named
// (kv_cache_dim): the present proves it 16, so Shape(past_key) evaluates.

// CHECK-LABEL: func.func @mha_with_past
// CHECK: %[[K:.*]] = folio.onnx_node "Transpose"
// CHECK: %[[KEYS:.*]] = folio.onnx_node "Concat"(%arg2, %{{.*}}) {{.*}} -> tensor<?x2x?x16xf32>
// CHECK: %[[VALUES:.*]] = folio.onnx_node "Concat"(%arg3, %{{.*}}) {{.*}} -> tensor<?x2x?x16xf32>
// CHECK: %[[O:.*]] = folio.attention %{{.*}}, %[[KEYS]], %[[VALUES]], %arg1 {scale = 2.500000e-01 : f64} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
// CHECK-NOT: "MultiHeadAttention"
// CHECK: return %{{.*}}, %[[KEYS]], %[[VALUES]]
func.func @mha_with_past(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                         %mask: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "total_sequence_length"]},
                         %pk: tensor<?x2x?x?xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", "kv_cache_dim"]},
                         %pv: tensor<?x2x?x?xf32> {folio.onnx_name = "past_key_values.0.value", folio.dim_names = ["batch_size", "", "past_sequence_length", "kv_cache_dim"]},
                         %q: tensor<?x?x32xf32> {folio.dim_names = ["batch_size", "sequence_length", ""]},
                         %k: tensor<?x?x32xf32> {folio.dim_names = ["batch_size", "sequence_length", ""]},
                         %v: tensor<?x?x32xf32> {folio.dim_names = ["batch_size", "sequence_length", ""]})
    -> (tensor<?x?x32xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %i0 = arith.constant dense<0> : tensor<i64>
  %i1 = arith.constant dense<1> : tensor<i64>
  %i2 = arith.constant dense<2> : tensor<i64>
  %a0 = arith.constant dense<0> : tensor<1xi64>
  %a1 = arith.constant dense<1> : tensor<1xi64>
  %pshape = folio.onnx_node "Shape"(%pk) {opset = 21 : i64} : (tensor<?x2x?x?xf32>) -> tensor<4xi64>
  %past = folio.onnx_node "Gather"(%pshape, %i2) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ishape = folio.onnx_node "Shape"(%ids) {opset = 21 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = folio.onnx_node "Gather"(%ishape, %i1) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %total = folio.onnx_node "Add"(%past, %seq) {opset = 21 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %qr = folio.onnx_node "Range"(%past, %total, %i1) {opset = 21 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kr = folio.onnx_node "Range"(%i0, %total, %i1) {opset = 21 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %qc = folio.onnx_node "Unsqueeze"(%qr, %a1) {opset = 21 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %kc = folio.onnx_node "Unsqueeze"(%kr, %a0) {opset = 21 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = folio.onnx_node "LessOrEqual"(%kc, %qc) {opset = 21 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %axes12 = arith.constant dense<[1, 2]> : tensor<2xi64>
  %m4 = folio.onnx_node "Unsqueeze"(%mask, %axes12) {opset = 21 : i64} : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x1x1x?xi64>
  %mb = folio.onnx_node "Cast"(%m4) {opset = 21 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %keep = folio.onnx_node "And"(%causal, %mb) {opset = 21 : i64} : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %low = arith.constant dense<-65504.0> : tensor<f32>
  %bias = folio.onnx_node "Where"(%keep, %zero, %low) {opset = 21 : i64} : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %y:3 = folio.onnx_node "MultiHeadAttention"(%q, %k, %v, %bias, %pk, %pv) {domain = "com.microsoft", node_name = "mha", opset = 1 : i64, absent_inputs = array<i64: 3, 4>, onnx_attributes = {num_heads = 2 : i64, scale = 2.500000e-01 : f32}} : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x1x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> (tensor<?x?x32xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %y#0, %y#1, %y#2 : tensor<?x?x32xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// Tests MultiHeadAttention fed keys and values repeated for GQA and merged
// back to [B, L, 2 * 16] (the builder's GQA models at fp16: Unsqueeze ->
// Expand -> Reshape -> Transpose -> Reshape of the cache concat), with a
// causal mask written for prefill without past and one-token decode only:
// [S, S] expanded to [B, 1, S, past + S], which does not broadcast for
// several new tokens over a past. Attention reads the concat's single KV
// head, and the compile warns that the class proven on prefill and decode is
// also served for chunked prefill.

// CHECK-LABEL: func.func @mha_repeated_kv
// CHECK: %[[KC:.*]] = folio.onnx_node "Concat"(%arg1, %arg4)
// CHECK: %[[VC:.*]] = folio.onnx_node "Concat"(%arg2, %arg5)
// CHECK-NOT: "Expand"
// CHECK: folio.attention %{{.*}}, %[[KC]], %[[VC]] {scale = 2.500000e-01 : f64} : (tensor<?x2x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x2x?x16xf32>
func.func @mha_repeated_kv(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                           %pk: tensor<?x1x?x16xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                           %pv: tensor<?x1x?x16xf32> {folio.onnx_name = "past_key_values.0.value", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                           %q: tensor<?x?x32xf32> {folio.dim_names = ["batch_size", "sequence_length", ""]},
                           %knew: tensor<?x1x?x16xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                           %vnew: tensor<?x1x?x16xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]})
    -> (tensor<?x?x32xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) {
  %kc = folio.onnx_node "Concat"(%pk, %knew) {opset = 21 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x1x?x16xf32>
  %vc = folio.onnx_node "Concat"(%pv, %vnew) {opset = 21 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x1x?x16xf32>
  %a2 = arith.constant dense<2> : tensor<1xi64>
  %a0 = arith.constant dense<0> : tensor<1xi64>
  %a1 = arith.constant dense<1> : tensor<1xi64>
  %i0 = arith.constant dense<0> : tensor<i64>
  %i1 = arith.constant dense<1> : tensor<i64>
  %kshape = folio.onnx_node "Shape"(%kc) {opset = 21 : i64} : (tensor<?x1x?x16xf32>) -> tensor<4xi64>
  %b = folio.onnx_node "Slice"(%kshape, %a0, %a1) {opset = 21 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %i3 = arith.constant dense<3> : tensor<1xi64>
  %l = folio.onnx_node "Slice"(%kshape, %a2, %i3) {opset = 21 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %c16 = arith.constant dense<16> : tensor<1xi64>
  %eshape = folio.onnx_node "Concat"(%b, %a1, %a2, %l, %c16) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<5xi64>
  %rshape = folio.onnx_node "Concat"(%b, %a2, %l, %c16) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %merge = arith.constant dense<[0, 0, 32]> : tensor<3xi64>
  %ku = folio.onnx_node "Unsqueeze"(%kc, %a2) {opset = 21 : i64} : (tensor<?x1x?x16xf32>, tensor<1xi64>) -> tensor<?x1x1x?x16xf32>
  %ke = folio.onnx_node "Expand"(%ku, %eshape) {opset = 21 : i64} : (tensor<?x1x1x?x16xf32>, tensor<5xi64>) -> tensor<?x1x2x?x16xf32>
  %kr = folio.onnx_node "Reshape"(%ke, %rshape) {opset = 21 : i64} : (tensor<?x1x2x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x16xf32>
  %kt = folio.onnx_node "Transpose"(%kr) {opset = 21 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  %k3 = folio.onnx_node "Reshape"(%kt, %merge) {opset = 21 : i64} : (tensor<?x?x2x16xf32>, tensor<3xi64>) -> tensor<?x?x32xf32>
  %vu = folio.onnx_node "Unsqueeze"(%vc, %a2) {opset = 21 : i64} : (tensor<?x1x?x16xf32>, tensor<1xi64>) -> tensor<?x1x1x?x16xf32>
  %ve = folio.onnx_node "Expand"(%vu, %eshape) {opset = 21 : i64} : (tensor<?x1x1x?x16xf32>, tensor<5xi64>) -> tensor<?x1x2x?x16xf32>
  %vr = folio.onnx_node "Reshape"(%ve, %rshape) {opset = 21 : i64} : (tensor<?x1x2x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x16xf32>
  %vt = folio.onnx_node "Transpose"(%vr) {opset = 21 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x2x?x16xf32>) -> tensor<?x?x2x16xf32>
  %v3 = folio.onnx_node "Reshape"(%vt, %merge) {opset = 21 : i64} : (tensor<?x?x2x16xf32>, tensor<3xi64>) -> tensor<?x?x32xf32>
  // The builder's causal mask: [S, S], then Expand to [B, 1, S, L].
  %ishape = folio.onnx_node "Shape"(%ids) {opset = 21 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = folio.onnx_node "Gather"(%ishape, %i1) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %r = folio.onnx_node "Range"(%i0, %seq, %i1) {opset = 21 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %rq = folio.onnx_node "Unsqueeze"(%r, %a1) {opset = 21 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %rk = folio.onnx_node "Unsqueeze"(%r, %a0) {opset = 21 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %keep = folio.onnx_node "LessOrEqual"(%rk, %rq) {opset = 21 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %low = arith.constant dense<-65504.0> : tensor<f32>
  %square = folio.onnx_node "Where"(%keep, %zero, %low) {opset = 21 : i64} : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %bshape = folio.onnx_node "Concat"(%b, %a1, %l) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %sq = folio.onnx_node "Unsqueeze"(%seq, %a0) {opset = 21 : i64} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %fshape = folio.onnx_node "Concat"(%b, %a1, %sq, %l) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %bias = folio.onnx_node "Expand"(%square, %fshape) {node_name = "expand_mask", opset = 21 : i64} : (tensor<?x?xf32>, tensor<4xi64>) -> tensor<?x1x?x?xf32>
  // expected-warning @+1 {{attention at node 'mha': the graph defines its mask for prefill without past and one-token decode only (the mask cannot be evaluated with batch 1, 3 past and 4 new tokens: node 'expand_mask': Expand is undefined here: shapes [4, 4], [1, 1, 4, 7] do not broadcast); it is the same class on both, which Folio also serves for several new tokens over a past (chunked prefill, prefix caching)}}
  %y:3 = folio.onnx_node "MultiHeadAttention"(%q, %k3, %v3, %bias) {domain = "com.microsoft", node_name = "mha", opset = 1 : i64, absent_inputs = array<i64: 3, 4>, onnx_attributes = {num_heads = 2 : i64, scale = 2.500000e-01 : f32}} : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x1x?x?xf32>) -> (tensor<?x?x32xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  return %y#0, %kc, %vc : tensor<?x?x32xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>
}
