// RUN: folio-opt %s --split-input-file --folio-raise-attention | FileCheck %s

// Tests that GroupQueryAttention with packed QKV (key and value omitted), as
// ONNX Runtime GenAI's model builder writes it, is split by num_heads and
// kv_num_heads into q [0, 16), k [16, 24) and v [24, 32); that its rotary
// (do_rotary) takes positions seqlens_k + 1 - S + s built from seqlens_k,
// not from the past's shape; that local_window_size = 2 is a window of 2 keys,
// the query's own included; and that the present is Concat(past, rotated k)
// with the head size the query implies (the past names it kv_cache_dim).

func.func @packed(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                %mask: tensor<?x?xi64> {folio.onnx_name = "attention_mask", folio.dim_names = ["batch_size", "total_sequence_length"]},
                %pk: tensor<?x1x?x?xf32> {folio.onnx_name = "past_key_values.0.key", folio.dim_names = ["batch_size", "", "past_sequence_length", "kv_cache_dim"]},
                %pv: tensor<?x1x?x?xf32> {folio.onnx_name = "past_key_values.0.value", folio.dim_names = ["batch_size", "", "past_sequence_length", "kv_cache_dim"]},
                %qkv: tensor<?x?x32xf32> {folio.dim_names = ["batch_size", "sequence_length", ""]})
    -> (tensor<?x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) {
  %c1 = arith.constant dense<1> : tensor<1xi64>
  %i1 = arith.constant dense<1> : tensor<i64>
  %sum = folio.onnx_node "ReduceSum"(%mask, %c1) {opset = 21 : i64, onnx_attributes = {keepdims = 0 : i64}} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %sub = folio.onnx_node "Sub"(%sum, %c1) {opset = 21 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %seqlens = folio.onnx_node "Cast"(%sub) {opset = 21 : i64, onnx_attributes = {to = 6 : i64}} : (tensor<?xi64>) -> tensor<?xi32>
  %shape = folio.onnx_node "Shape"(%mask) {opset = 21 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %tot64 = folio.onnx_node "Gather"(%shape, %i1) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %total = folio.onnx_node "Cast"(%tot64) {opset = 21 : i64, onnx_attributes = {to = 6 : i64}} : (tensor<i64>) -> tensor<i32>
  %cos = arith.constant dense<[[1.00000000e+00, 1.00000000e+00, 1.00000000e+00, 1.00000000e+00], [5.40302306e-01, 9.95004165e-01, 9.99950000e-01, 9.99999500e-01], [-4.16146837e-01, 9.80066578e-01, 9.99800007e-01, 9.99998000e-01], [-9.89992497e-01, 9.55336489e-01, 9.99550034e-01, 9.99995500e-01], [-6.53643621e-01, 9.21060994e-01, 9.99200107e-01, 9.99992000e-01], [2.83662185e-01, 8.77582562e-01, 9.98750260e-01, 9.99987500e-01], [9.60170287e-01, 8.25335615e-01, 9.98200540e-01, 9.99982000e-01], [7.53902254e-01, 7.64842187e-01, 9.97551000e-01, 9.99975500e-01]]> : tensor<8x4xf32>
  %sin = arith.constant dense<[[0.00000000e+00, 0.00000000e+00, 0.00000000e+00, 0.00000000e+00], [8.41470985e-01, 9.98334166e-02, 9.99983333e-03, 9.99999833e-04], [9.09297427e-01, 1.98669331e-01, 1.99986667e-02, 1.99999867e-03], [1.41120008e-01, 2.95520207e-01, 2.99955002e-02, 2.99999550e-03], [-7.56802495e-01, 3.89418342e-01, 3.99893342e-02, 3.99998933e-03], [-9.58924275e-01, 4.79425539e-01, 4.99791693e-02, 4.99997917e-03], [-2.79415498e-01, 5.64642473e-01, 5.99640065e-02, 5.99996400e-03], [6.56986599e-01, 6.44217687e-01, 6.99428473e-02, 6.99994283e-03]]> : tensor<8x4xf32>
  %y:3 = folio.onnx_node "GroupQueryAttention"(%qkv, %pk, %pv, %seqlens, %total, %cos, %sin) {domain = "com.microsoft", node_name = "gqa", opset = 1 : i64, absent_inputs = array<i64: 1, 2>, onnx_attributes = {num_heads = 2 : i64, kv_num_heads = 1 : i64, local_window_size = 2 : i64, do_rotary = 1 : i64, rotary_interleaved = 0 : i64, softcap = 0.0 : f32}} : (tensor<?x?x32xf32>, tensor<?x1x?x?xf32>, tensor<?x1x?x?xf32>, tensor<?xi32>, tensor<i32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<?x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>)
  return %y#0, %y#1, %y#2 : tensor<?x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>
}

// CHECK-LABEL: func.func @packed
// CHECK: %[[SEQLENS:.*]] = folio.onnx_node "Cast"
// CHECK: %[[Q:.*]] = folio.onnx_node "Slice"({{.*}}) {node_name = "gqa/folio_packed_q"{{.*}} -> tensor<?x?x16xf32>
// CHECK: %[[K:.*]] = folio.onnx_node "Slice"({{.*}}) {node_name = "gqa/folio_packed_k"{{.*}} -> tensor<?x?x8xf32>
// CHECK: %[[V:.*]] = folio.onnx_node "Slice"({{.*}}) {node_name = "gqa/folio_packed_v"{{.*}} -> tensor<?x?x8xf32>
// CHECK: folio.onnx_node "Cast"(%[[SEQLENS]]) {node_name = "gqa/folio_positions"
// CHECK: %[[POS:.*]] = folio.onnx_node "Add"({{.*}}) {node_name = "gqa/folio_positions"{{.*}} -> tensor<?x?xi64>
// CHECK: %[[RQ:.*]] = folio.rotary %{{.*}}, %[[POS]] {rotary_dim = 8 : i64} : (tensor<?x2x?x8xf32>
// CHECK: %[[RK:.*]] = folio.rotary %{{.*}}, %[[POS]] {rotary_dim = 8 : i64} : (tensor<?x1x?x8xf32>
// CHECK: %[[KEYS:.*]] = folio.onnx_node "Concat"(%arg2, %[[RK]]) {{.*}} -> tensor<?x1x?x8xf32>
// CHECK: %[[VALUES:.*]] = folio.onnx_node "Concat"(%arg3, %{{.*}}) {{.*}} -> tensor<?x1x?x8xf32>
// CHECK: folio.attention %[[RQ]], %[[KEYS]], %[[VALUES]], %arg1 {scale = 0.35355339059327373 : f64, sliding_window = 2 : i64}
// CHECK: return %{{.*}}, %[[KEYS]], %[[VALUES]]
