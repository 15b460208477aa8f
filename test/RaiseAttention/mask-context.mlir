// RUN: folio-opt %s --split-input-file --folio-raise-attention | FileCheck %s

// Masks are classified by evaluation, so a classification holds only up to
// the longest key length evaluated: the function records the shortest such
// length of its masks as folio.max_context. One query over 2^20 keys is the
// longest cached probe, an unpadded 2048-token sequence the longest one
// without a cache.

// Tests that a sliding window of 100000 over a KV cache, wider than every
// length probed by a short sample set, is found by the one-query probe over
// 2^20 keys, which also bounds the proven context.

// CHECK-LABEL: func @cached_window_100000
// CHECK-SAME: attributes {folio.max_context = 1048576 : i64}
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64, sliding_window = 100000 : i64}
func.func @cached_window_100000(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                %am: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "total_sequence_length"]},
                                %past: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                                %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                %knew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) {
  %kc = folio.onnx_node "Concat"(%past, %knew) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %kt = folio.onnx_node "Transpose"(%kc) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  // keep = (k <= q) & (q - k < 100000) & attention_mask[k], q = past + arange(S)
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %s2 = arith.constant dense<2> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
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
  %w = arith.constant dense<100000> : tensor<i64>
  %near = folio.onnx_node "Less"(%dist, %w) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %band = folio.onnx_node "And"(%causal, %near) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %axes12 = arith.constant dense<[1, 2]> : tensor<2xi64>
  %am4 = folio.onnx_node "Unsqueeze"(%am, %axes12) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x1x1x?xi64>
  %amb = folio.onnx_node "Cast"(%am4) {opset = 17 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xi1>
  %keep = folio.onnx_node "And"(%band, %amb) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<?x1x?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %kc) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o, %kc : tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}

// -----

// Tests that a window of 2000000, wider than the longest cached probe, is
// not silently served as causal at any length: the mask is causal as far as
// it was evaluated, and the function records that length.

// CHECK-LABEL: func @cached_window_beyond_probes
// CHECK-SAME: attributes {folio.max_context = 1048576 : i64}
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64} :
func.func @cached_window_beyond_probes(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                       %past: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                                       %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                       %knew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) {
  %kc = folio.onnx_node "Concat"(%past, %knew) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %kt = folio.onnx_node "Transpose"(%kc) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %s2 = arith.constant dense<2> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %seq = folio.onnx_node "Gather"(%ids_shape, %s1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %pshape = folio.onnx_node "Shape"(%past) {opset = 17 : i64} : (tensor<?x1x?x4xf32>) -> tensor<4xi64>
  %plen = folio.onnx_node "Gather"(%pshape, %s2) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %total = folio.onnx_node "Add"(%plen, %seq) {opset = 17 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %qpos = folio.onnx_node "Range"(%plen, %total, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos = folio.onnx_node "Range"(%s0, %total, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos2 = folio.onnx_node "Unsqueeze"(%kpos, %i0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %qpos2 = folio.onnx_node "Unsqueeze"(%qpos, %i1) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %causal = folio.onnx_node "LessOrEqual"(%kpos2, %qpos2) {opset = 17 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %dist = folio.onnx_node "Sub"(%qpos2, %kpos2) {opset = 17 : i64} : (tensor<?x1xi64>, tensor<1x?xi64>) -> tensor<?x?xi64>
  %w = arith.constant dense<2000000> : tensor<i64>
  %near = folio.onnx_node "Less"(%dist, %w) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %keep = folio.onnx_node "And"(%causal, %near) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %kc) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o, %kc : tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}

// -----

// Tests that without a cache a window of 1500, wider than a 1100-token
// sample, is found by the 2048-token probe.

// CHECK-LABEL: func @nocache_window_1500
// CHECK-SAME: attributes {folio.max_context = 2048 : i64}
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64, sliding_window = 1500 : i64}
func.func @nocache_window_1500(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                               %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                               %k: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x1x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %seq = folio.onnx_node "Gather"(%ids_shape, %s1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %pos = folio.onnx_node "Range"(%s0, %seq, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos = folio.onnx_node "Unsqueeze"(%pos, %i0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %qpos = folio.onnx_node "Unsqueeze"(%pos, %i1) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %causal = folio.onnx_node "LessOrEqual"(%kpos, %qpos) {opset = 17 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %dist = folio.onnx_node "Sub"(%qpos, %kpos) {opset = 17 : i64} : (tensor<?x1xi64>, tensor<1x?xi64>) -> tensor<?x?xi64>
  %w = arith.constant dense<1500> : tensor<i64>
  %near = folio.onnx_node "Less"(%dist, %w) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %keep = folio.onnx_node "And"(%causal, %near) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o : tensor<?x1x?x4xf32>
}

// -----

// Tests that without a cache an additive window of 3000, wider than the
// longest probe, leaves the mask causal up to the 2048 tokens evaluated and
// records that length.

// CHECK-LABEL: func @nocache_window_beyond_probes
// CHECK-SAME: attributes {folio.max_context = 2048 : i64}
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64} :
func.func @nocache_window_beyond_probes(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                                        %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                                        %k: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x1x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %s0 = arith.constant dense<0> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %i0 = arith.constant dense<0> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %seq = folio.onnx_node "Gather"(%ids_shape, %s1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %pos = folio.onnx_node "Range"(%s0, %seq, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos = folio.onnx_node "Unsqueeze"(%pos, %i0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %qpos = folio.onnx_node "Unsqueeze"(%pos, %i1) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %causal = folio.onnx_node "LessOrEqual"(%kpos, %qpos) {opset = 17 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %dist = folio.onnx_node "Sub"(%qpos, %kpos) {opset = 17 : i64} : (tensor<?x1xi64>, tensor<1x?xi64>) -> tensor<?x?xi64>
  %w = arith.constant dense<3000> : tensor<i64>
  %near = folio.onnx_node "Less"(%dist, %w) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %keep = folio.onnx_node "And"(%causal, %near) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %fmin = arith.constant dense<-3.40282347E+38> : tensor<f32>
  %mask = folio.onnx_node "Where"(%keep, %zero, %fmin) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %m = folio.onnx_node "Add"(%s, %mask) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%m) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o : tensor<?x1x?x4xf32>
}

// -----

// Tests that a causal mask sliced from a fixed 64 x 64 buffer (GPT-2's
// `bias[:, :, total - S : total, :total]`), which cannot be built for more
// than 64 keys, is proven up to exactly 64 (the long probes fail, and the
// length is bisected between the last that evaluated and the first that did
// not), and that the function records the shortest proven context of its
// attentions: 64, not the 2^20 of the second, Range-built mask.

// CHECK-LABEL: func @cached_buffer_64
// CHECK-SAME: attributes {folio.max_context = 64 : i64}
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64} :
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64} :
func.func @cached_buffer_64(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                            %past: tensor<?x1x?x4xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", ""]},
                            %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                            %knew: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) {
  %kc = folio.onnx_node "Concat"(%past, %knew) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %kt = folio.onnx_node "Transpose"(%kc) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  %bshape = arith.constant dense<[1, 1, 64, 64]> : tensor<4xi64>
  %ones = folio.onnx_node "ConstantOfShape"(%bshape) {opset = 17 : i64, onnx_attributes = {value = dense<1.0> : tensor<1xf32>}} : (tensor<4xi64>) -> tensor<1x1x64x64xf32>
  %s0 = arith.constant dense<0> : tensor<i64>
  %bias = folio.onnx_node "Trilu"(%ones, %s0) {opset = 17 : i64, onnx_attributes = {upper = 0 : i64}} : (tensor<1x1x64x64xf32>, tensor<i64>) -> tensor<1x1x64x64xf32>
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
  %window = folio.onnx_node "Slice"(%bias, %starts, %ends, %axes) {opset = 17 : i64} : (tensor<1x1x64x64xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x?x?xf32>
  %keep = folio.onnx_node "Cast"(%window) {opset = 17 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<1x1x?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %kc) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  // A second attention, causal by Range/LessOrEqual at any length.
  %s1 = arith.constant dense<1> : tensor<i64>
  %seq0 = folio.onnx_node "Squeeze"(%seq, %i0) {opset = 17 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %total0 = folio.onnx_node "Squeeze"(%total, %i0) {opset = 17 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %plen = folio.onnx_node "Sub"(%total0, %seq0) {opset = 17 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %qpos = folio.onnx_node "Range"(%plen, %total0, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos = folio.onnx_node "Range"(%s0, %total0, %s1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %kpos2 = folio.onnx_node "Unsqueeze"(%kpos, %i0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %qpos2 = folio.onnx_node "Unsqueeze"(%qpos, %i1) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %causal = folio.onnx_node "LessOrEqual"(%kpos2, %qpos2) {opset = 17 : i64} : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %masked2 = folio.onnx_node "Where"(%causal, %s, %ninf) {opset = 17 : i64} : (tensor<?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p2 = folio.onnx_node "Softmax"(%masked2) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o2 = folio.onnx_node "MatMul"(%p2, %kc) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o, %o2, %kc : tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>
}

// -----

// Tests the fixed 64 x 64 buffer without a cache (`bias[:, :, :S, :S]`):
// the 300-token probe fails and the bisection proves 64.

// CHECK-LABEL: func @nocache_buffer_64
// CHECK-SAME: attributes {folio.max_context = 64 : i64}
// CHECK: folio.attention {{.*}} {scale = 1.000000e+00 : f64} :
func.func @nocache_buffer_64(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                             %q: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]},
                             %k: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x1x?x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x1x?x4xf32>) -> tensor<?x1x4x?xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x4x?xf32>) -> tensor<?x1x?x?xf32>
  %bshape = arith.constant dense<[1, 1, 64, 64]> : tensor<4xi64>
  %ones = folio.onnx_node "ConstantOfShape"(%bshape) {opset = 17 : i64, onnx_attributes = {value = dense<1.0> : tensor<1xf32>}} : (tensor<4xi64>) -> tensor<1x1x64x64xf32>
  %s0 = arith.constant dense<0> : tensor<i64>
  %bias = folio.onnx_node "Trilu"(%ones, %s0) {opset = 17 : i64, onnx_attributes = {upper = 0 : i64}} : (tensor<1x1x64x64xf32>, tensor<i64>) -> tensor<1x1x64x64xf32>
  %i1 = arith.constant dense<1> : tensor<1xi64>
  %i2 = arith.constant dense<2> : tensor<1xi64>
  %ids_shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = folio.onnx_node "Slice"(%ids_shape, %i1, %i2) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %zeros = arith.constant dense<0> : tensor<2xi64>
  %ends = folio.onnx_node "Concat"(%seq, %seq) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %axes = arith.constant dense<[2, 3]> : tensor<2xi64>
  %window = folio.onnx_node "Slice"(%bias, %zeros, %ends, %axes) {opset = 17 : i64} : (tensor<1x1x64x64xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1x?x?xf32>
  %keep = folio.onnx_node "Cast"(%window) {opset = 17 : i64, onnx_attributes = {to = 9 : i64}} : (tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %masked = folio.onnx_node "Where"(%keep, %s, %ninf) {opset = 17 : i64} : (tensor<1x1x?x?xi1>, tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %p = folio.onnx_node "Softmax"(%masked) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<?x1x?x?xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %o : tensor<?x1x?x4xf32>
}

// -----

// Tests that attention without a mask holds at any length: nothing was
// evaluated, so the function gets no limit.

// CHECK-LABEL: func @unmasked
// CHECK-NOT: folio.max_context
// CHECK: folio.attention
func.func @unmasked(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = folio.onnx_node "Softmax"(%s) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = folio.onnx_node "MatMul"(%p, %k) {opset = 17 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
