// RUN: folio-opt %s --split-input-file --folio-raise-rotary | FileCheck %s
// RUN: folio-opt %s --split-input-file --folio-raise-rotary="table-positions=3" | FileCheck %s --check-prefix=TABLE

// Tests partial half-split rotary (2 of 4 channels) with cos/sin computed as
// inv_freq x positions (Cos/Sin of a MatMul, as HF's rotary_emb exports):
// the Slice/Neg/Concat pieces and the angle subgraph go, the base comes back
// from inv_freq, and position_ids is the positions operand.

// CHECK-LABEL: func @partial_half_split
// CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<?x?xi64> {folio.dim_names = ["batch_size", "sequence_length"], folio.onnx_name = "position_ids"}, %[[X:[a-z0-9]+]]: tensor<?x2x?x4xf32>
// CHECK-NOT: "Neg"
// CHECK-NOT: "Cos"
// CHECK: %[[R:.*]] = folio.rotary %[[X]], %[[POS]] {rotary_dim = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x?xi64>) -> tensor<?x2x?x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @partial_half_split(%pos: tensor<?x?xi64> {folio.onnx_name = "position_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                              %x: tensor<?x2x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x2x?x4xf32> {
  %inv = arith.constant dense<[[1.0]]> : tensor<1x1xf32>
  %a1 = arith.constant dense<1> : tensor<1xi64>
  %pu = folio.onnx_node "Unsqueeze"(%pos, %a1) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %pf = folio.onnx_node "Cast"(%pu) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<?x1x?xi64>) -> tensor<?x1x?xf32>
  %f = folio.onnx_node "MatMul"(%inv, %pf) {opset = 17 : i64} : (tensor<1x1xf32>, tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
  %ft = folio.onnx_node "Transpose"(%f) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1>}} : (tensor<?x1x?xf32>) -> tensor<?x?x1xf32>
  %emb = folio.onnx_node "Concat"(%ft, %ft) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> tensor<?x?x2xf32>
  %cos3 = folio.onnx_node "Cos"(%emb) {opset = 17 : i64} : (tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
  %sin3 = folio.onnx_node "Sin"(%emb) {opset = 17 : i64} : (tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
  %cos = folio.onnx_node "Unsqueeze"(%cos3, %a1) {opset = 17 : i64} : (tensor<?x?x2xf32>, tensor<1xi64>) -> tensor<?x1x?x2xf32>
  %sin = folio.onnx_node "Unsqueeze"(%sin3, %a1) {opset = 17 : i64} : (tensor<?x?x2xf32>, tensor<1xi64>) -> tensor<?x1x?x2xf32>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c3 = arith.constant dense<3> : tensor<1xi64>
  %cmax = arith.constant dense<9223372036854775807> : tensor<1xi64>
  %xr = folio.onnx_node "Slice"(%x, %c0, %c2, %c3) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x2x?x2xf32>
  %xp = folio.onnx_node "Slice"(%x, %c2, %cmax, %c3) {opset = 17 : i64} : (tensor<?x2x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x2x?x2xf32>
  %x1 = folio.onnx_node "Slice"(%xr, %c0, %a1, %c3) {opset = 17 : i64} : (tensor<?x2x?x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x2x?x1xf32>
  %x2 = folio.onnx_node "Slice"(%xr, %a1, %cmax, %c3) {opset = 17 : i64} : (tensor<?x2x?x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x2x?x1xf32>
  %nx2 = folio.onnx_node "Neg"(%x2) {opset = 17 : i64} : (tensor<?x2x?x1xf32>) -> tensor<?x2x?x1xf32>
  %rot = folio.onnx_node "Concat"(%nx2, %x1) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x1xf32>, tensor<?x2x?x1xf32>) -> tensor<?x2x?x2xf32>
  %a = folio.onnx_node "Mul"(%xr, %cos) {opset = 17 : i64} : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %b = folio.onnx_node "Mul"(%rot, %sin) {opset = 17 : i64} : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %sum = folio.onnx_node "Add"(%a, %b) {opset = 17 : i64} : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %y = folio.onnx_node "Concat"(%sum, %xp) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// Tests the opset-23 RotaryEmbedding on [B, S, H*D] with constant caches of
// base 100: heads are split around folio.rotary and base is read back.

// CHECK-LABEL: func @fused_onnx23
// CHECK: %[[S:.*]] = folio.onnx_node "Reshape"
// CHECK: %[[T:.*]] = folio.onnx_node "Transpose"(%[[S]])
// CHECK: %[[R:.*]] = folio.rotary %[[T]], %{{.*}} {base = 1.000000e+02 : f64, rotary_dim = 4 : i64} : (tensor<?x2x?x4xf32>, tensor<?x?xi64>) -> tensor<?x2x?x4xf32>
// CHECK: folio.onnx_node "Transpose"(%[[R]])
// CHECK-NOT: RotaryEmbedding
func.func @fused_onnx23(%pos: tensor<?x?xi64> {folio.onnx_name = "position_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                        %x: tensor<?x?x8xf32> {folio.dim_names = ["batch_size", "sequence_length", ""]}) -> tensor<?x?x8xf32> {
  // cos/sin of p * [1, 0.1] for p = 0, 1, 2, 3.
  %cos = arith.constant dense<[[1.0, 1.0], [0.540302306, 0.995004165], [-0.416146837, 0.980066578], [-0.989992497, 0.955336489]]> : tensor<4x2xf32>
  %sin = arith.constant dense<[[0.0, 0.0], [0.841470985, 0.0998334166], [0.909297427, 0.198669331], [0.141120008, 0.295520207]]> : tensor<4x2xf32>
  %y = folio.onnx_node "RotaryEmbedding"(%x, %cos, %sin, %pos) {opset = 23 : i64, onnx_attributes = {num_heads = 2 : i64}} : (tensor<?x?x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Tests that computed angles that are not position * inv_freq (here
// position^2 * inv_freq) become a cos_sin_cache of table-positions rows.

// TABLE-LABEL: func @not_geometric
// TABLE: %[[C:.*]] = arith.constant dense<{{.*}}> : tensor<3x4xf32>
// TABLE: folio.rotary %{{.*}}, %{{.*}}, %[[C]] {rotary_dim = 4 : i64} : (tensor<?x1x?x4xf32>, tensor<?x?xi64>, tensor<3x4xf32>)
func.func @not_geometric(%pos: tensor<?x?xi64> {folio.onnx_name = "position_ids", folio.dim_names = ["batch_size", "sequence_length"]},
                         %x: tensor<?x1x?x4xf32> {folio.dim_names = ["batch_size", "", "sequence_length", ""]}) -> tensor<?x1x?x4xf32> {
  %inv = arith.constant dense<[[1.0], [0.5]]> : tensor<2x1xf32>
  %a1 = arith.constant dense<1> : tensor<1xi64>
  %pu = folio.onnx_node "Unsqueeze"(%pos, %a1) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x1x?xi64>
  %pf = folio.onnx_node "Cast"(%pu) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<?x1x?xi64>) -> tensor<?x1x?xf32>
  %sq = folio.onnx_node "Mul"(%pf, %pf) {opset = 17 : i64} : (tensor<?x1x?xf32>, tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
  %f = folio.onnx_node "MatMul"(%inv, %sq) {opset = 17 : i64} : (tensor<2x1xf32>, tensor<?x1x?xf32>) -> tensor<?x2x?xf32>
  %ft = folio.onnx_node "Transpose"(%f) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1>}} : (tensor<?x2x?xf32>) -> tensor<?x?x2xf32>
  %emb = folio.onnx_node "Concat"(%ft, %ft) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> tensor<?x?x4xf32>
  %cos3 = folio.onnx_node "Cos"(%emb) {opset = 17 : i64} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %sin3 = folio.onnx_node "Sin"(%emb) {opset = 17 : i64} : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %cos = folio.onnx_node "Unsqueeze"(%cos3, %a1) {opset = 17 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x1x?x4xf32>
  %sin = folio.onnx_node "Unsqueeze"(%sin3, %a1) {opset = 17 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x1x?x4xf32>
  %c0 = arith.constant dense<0> : tensor<1xi64>
  %c2 = arith.constant dense<2> : tensor<1xi64>
  %c3 = arith.constant dense<3> : tensor<1xi64>
  %cmax = arith.constant dense<9223372036854775807> : tensor<1xi64>
  %x1 = folio.onnx_node "Slice"(%x, %c0, %c2, %c3) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x1x?x2xf32>
  %x2 = folio.onnx_node "Slice"(%x, %c2, %cmax, %c3) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x1x?x2xf32>
  %nx2 = folio.onnx_node "Neg"(%x2) {opset = 17 : i64} : (tensor<?x1x?x2xf32>) -> tensor<?x1x?x2xf32>
  %rot = folio.onnx_node "Concat"(%nx2, %x1) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<?x1x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x1x?x4xf32>
  %a = folio.onnx_node "Mul"(%x, %cos) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %b = folio.onnx_node "Mul"(%rot, %sin) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  %y = folio.onnx_node "Add"(%a, %b) {opset = 17 : i64} : (tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32>) -> tensor<?x1x?x4xf32>
  return %y : tensor<?x1x?x4xf32>
}
