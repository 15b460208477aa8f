// RUN: folio-opt %s --split-input-file --folio-raise-linear | FileCheck %s

// Tests that weights a model brings quantized become one folio.dequantize
// over constants feeding folio.linear: com.microsoft MatMulNBits (int4
// codes in blocks along K, low nibble first, default zero point 8) and QDQ
// (DequantizeLinear over a constant integer weight), and embedding tables
// quantized by com.microsoft GatherBlockQuantized. Codes and zero points
// are signed: 4-bit q stands for q - 8, uint8 q for q - 128.

// K = 32, N = 2, blocks of 16: every byte 0x98 is code 8 (low nibble) then
// 9, so the codes alternate 0, 1; no zero points; a bias.
// CHECK-LABEL: func @matmul_nbits
// CHECK-DAG: %[[CODES:.*]] = arith.constant dense_resource<mm_codes> : tensor<2x32xi4>
// CHECK-DAG: %[[SCALES:.*]] = arith.constant dense<{{\[}}[5.000000e-01, 2.500000e-01], [1.250000e-01, 1.000000e+00]]> : tensor<2x2xf32>
// CHECK: %[[W:.*]] = folio.dequantize %[[CODES]], %[[SCALES]] {block_size = 16 : i64} : (tensor<2x32xi4>, tensor<2x2xf32>) -> tensor<2x32xf32>
// CHECK: %[[BIAS:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: folio.linear %{{.*}}, %[[W]], %[[BIAS]] {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x32xf32>, tensor<2x32xf32>, tensor<2xf32>) -> tensor<?x2xf32>
// CHECK-NOT: folio.onnx_node
// CHECK: mm_codes: "0x40000000{{(0001)+}}"
func.func @matmul_nbits(%x: tensor<?x32xf32>) -> tensor<?x2xf32> {
  %b = arith.constant dense<152> : tensor<2x2x8xui8>
  %s = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %bias = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = folio.onnx_node "MatMulNBits"(%x, %b, %s, %bias) {node_name = "mm", domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3, 4>, onnx_attributes = {K = 32 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64}} : (tensor<?x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// accuracy_level 4 (int8 activations in ONNX Runtime) marks the weight;
// the levels above it (here 1, f32) do not.
// CHECK-LABEL: func @matmul_nbits_accuracy_level
// CHECK: folio.dequantize %{{.*}}, %{{.*}} {block_size = 16 : i64, int8_activations} : (tensor<2x32xi4>, tensor<2x2xf32>) -> tensor<2x32xf32>
// CHECK: folio.dequantize %{{.*}}, %{{.*}} {block_size = 16 : i64} : (tensor<2x32xi4>, tensor<2x2xf32>) -> tensor<2x32xf32>
func.func @matmul_nbits_accuracy_level(%x: tensor<?x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>) {
  %b = arith.constant dense<152> : tensor<2x2x8xui8>
  %s = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %y = folio.onnx_node "MatMulNBits"(%x, %b, %s) {node_name = "mm", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64, accuracy_level = 4 : i64}} : (tensor<?x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>) -> tensor<?x2xf32>
  %z = folio.onnx_node "MatMulNBits"(%x, %b, %s) {node_name = "mm2", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64, accuracy_level = 1 : i64}} : (tensor<?x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>) -> tensor<?x2xf32>
  return %y, %z : tensor<?x2xf32>, tensor<?x2xf32>
}

// -----

// Packed uint8 zero points, two blocks per byte (low nibble first): 0x97
// is 7 for block 0 and 9 for block 1, i.e. -1 and 1 once signed.
// CHECK-LABEL: func @matmul_nbits_zero_points
// CHECK-DAG: %[[Z:.*]] = arith.constant dense_resource<mm_zero_points> : tensor<2x2xi4>
// CHECK: folio.dequantize %{{.*}}, %{{.*}}, %[[Z]] {block_size = 16 : i64} : (tensor<2x32xi4>, tensor<2x2xf32>, tensor<2x2xi4>) -> tensor<2x32xf32>
// CHECK: mm_zero_points: "0x40000000FF01FF01"
func.func @matmul_nbits_zero_points(%x: tensor<?x32xf32>) -> tensor<?x2xf32> {
  %b = arith.constant dense<152> : tensor<2x2x8xui8>
  %s = arith.constant dense<0.5> : tensor<4xf32>
  %z = arith.constant dense<151> : tensor<2xui8>
  %y = folio.onnx_node "MatMulNBits"(%x, %b, %s, %z) {node_name = "mm", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64}} : (tensor<?x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>, tensor<2xui8>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// QDQ, uint8 per output channel (axis 1 of MatMul's [K, N] weight): the
// scale and zero point take the data's rank; codes and zero points shift
// by 128 (0x80 is 0, 0x82 is 2).
// CHECK-LABEL: func @qdq_per_channel
// CHECK-DAG: %[[C:.*]] = arith.constant dense_resource<dq_codes> : tensor<8x4xi8>
// CHECK-DAG: %[[S:.*]] = arith.constant dense<{{\[}}[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]]> : tensor<1x4xf32>
// CHECK-DAG: %[[Z:.*]] = arith.constant dense_resource<dq_zero_points> : tensor<1x4xi8>
// CHECK: %[[W:.*]] = folio.dequantize %[[C]], %[[S]], %[[Z]] : (tensor<8x4xi8>, tensor<1x4xf32>, tensor<1x4xi8>) -> tensor<8x4xf32>
// CHECK: folio.linear %{{.*}}, %[[W]] : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
// CHECK-NOT: folio.onnx_node
// CHECK: dq_codes: "0x40000000{{(02)+}}"
// CHECK: dq_zero_points: "0x4000000000000000"
func.func @qdq_per_channel(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %q = arith.constant dense<130> : tensor<8x4xui8>
  %s = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %z = arith.constant dense<128> : tensor<4xui8>
  %w = folio.onnx_node "DequantizeLinear"(%q, %s, %z) {node_name = "dq", opset = 13 : i64, onnx_attributes = {axis = 1 : i64}} : (tensor<8x4xui8>, tensor<4xf32>, tensor<4xui8>) -> tensor<8x4xf32>
  %y = folio.onnx_node "MatMul"(%x, %w) {opset = 13 : i64} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// QDQ in blocks of 16 along K (opset 21), int8, one weight read by two
// MatMuls: one folio.dequantize.
// CHECK-LABEL: func @qdq_blocked_shared
// CHECK-COUNT-1: folio.dequantize
// CHECK-SAME: {block_size = 16 : i64} : (tensor<32x4xi8>, tensor<2x4xf32>) -> tensor<32x4xf32>
// CHECK-COUNT-2: folio.linear
func.func @qdq_blocked_shared(%x: tensor<?x32xf32>, %x2: tensor<?x32xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %q = arith.constant dense<3> : tensor<32x4xi8>
  %s = arith.constant dense<0.5> : tensor<2x4xf32>
  %w = folio.onnx_node "DequantizeLinear"(%q, %s) {node_name = "dq", opset = 21 : i64, onnx_attributes = {axis = 0 : i64, block_size = 16 : i64}} : (tensor<32x4xi8>, tensor<2x4xf32>) -> tensor<32x4xf32>
  %y = folio.onnx_node "MatMul"(%x, %w) {opset = 21 : i64} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y2 = folio.onnx_node "MatMul"(%x2, %w) {opset = 21 : i64} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  return %y, %y2 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Activations quantized by the graph (static QDQ: a QuantizeLinear, here a
// function argument, before DequantizeLinear) are not weights: the nodes
// stay for the lowering to refuse by name.
// CHECK-LABEL: func @qdq_activation
// CHECK: folio.onnx_node "DequantizeLinear"
// CHECK: folio.onnx_node "MatMul"
func.func @qdq_activation(%q: tensor<8x4xi8>, %x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %s = arith.constant dense<0.5> : tensor<f32>
  %w = folio.onnx_node "DequantizeLinear"(%q, %s) {opset = 13 : i64} : (tensor<8x4xi8>, tensor<f32>) -> tensor<8x4xf32>
  %y = folio.onnx_node "MatMul"(%x, %w) {opset = 13 : i64} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// A tied embedding gathered from the transposed quantized output projection
// (what static quantization does to Qwen2's tied lm_head): the embedding
// reads a transposed f32 copy of the dequantized values, 0.5 * (3 - 1) = 1.0
// (0x3F800000), and the projection the folio.dequantize.
// CHECK-LABEL: func @tied_quantized_embedding
// CHECK: %[[W:.*]] = folio.dequantize
// CHECK: %[[T:.*]] = arith.constant dense_resource<folio_embedding_table_1> : tensor<4x8xf32>
// CHECK: %[[E:.*]] = folio.embedding %[[T]][%{{.*}}] : (tensor<4x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
// CHECK: folio.linear %[[E]], %[[W]] : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
// CHECK: folio_embedding_table_1: "0x40000000{{(0000803F)+}}"
func.func @tied_quantized_embedding(%ids: tensor<?xi64>) -> tensor<?x4xf32> {
  %q = arith.constant dense<3> : tensor<8x4xi8>
  %s = arith.constant dense<0.5> : tensor<4xf32>
  %z = arith.constant dense<1> : tensor<4xi8>
  %w = folio.onnx_node "DequantizeLinear"(%q, %s, %z) {node_name = "dq", opset = 21 : i64, onnx_attributes = {axis = 1 : i64}} : (tensor<8x4xi8>, tensor<4xf32>, tensor<4xi8>) -> tensor<8x4xf32>
  %t = folio.onnx_node "Transpose"(%w) {opset = 21 : i64, onnx_attributes = {perm = array<i64: 1, 0>}} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %e = folio.onnx_node "Gather"(%t, %ids) {opset = 21 : i64} : (tensor<4x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %y = folio.onnx_node "MatMul"(%e, %w) {opset = 21 : i64} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// com.microsoft GatherBlockQuantized with uint8 data packed as MatMulNBits
// packs B (K = 16 from 8 bytes, low nibble first; default zero point 8):
// every byte 0x98 is 0 then 1 once signed, so row 0 (scale 2) reads 0, 2.0
// (0x40000000) and row 1 (scale 0.5) 0, 0.5 (0x3F000000). The table is a
// dequantized f32 copy; the Mul by a positive scalar folds into the
// embedding's scale.
// CHECK-LABEL: func @gather_block_quantized_packed
// CHECK: %[[T:.*]] = arith.constant dense_resource<folio_embedding_table_1> : tensor<2x16xf32>
// CHECK: folio.embedding %[[T]][%{{.*}}] {scale = 4.000000e+00 : f64} : (tensor<2x16xf32>, tensor<?x?xi64>) -> tensor<?x?x16xf32>
// CHECK-NOT: folio.onnx_node
// CHECK-NOT: folio.dequantize
// CHECK: folio_embedding_table_1: "0x4000000000000000000000400000000000000040000000000000004000000000000000400000000000000040000000000000004000000000000000400000000000000040000000000000003F000000000000003F000000000000003F000000000000003F000000000000003F000000000000003F000000000000003F000000000000003F"
func.func @gather_block_quantized_packed(%ids: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
  %d = arith.constant dense<152> : tensor<2x8xui8>
  %s = arith.constant dense<[[2.0], [0.5]]> : tensor<2x1xf32>
  %e = folio.onnx_node "GatherBlockQuantized"(%d, %ids, %s) {node_name = "emb", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {bits = 4 : i64, block_size = 16 : i64}} : (tensor<2x8xui8>, tensor<?x?xi64>, tensor<2x1xf32>) -> tensor<?x?x16xf32>
  %c = arith.constant dense<4.0> : tensor<f32>
  %y = folio.onnx_node "Mul"(%e, %c) {opset = 21 : i64} : (tensor<?x?x16xf32>, tensor<f32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Packed uint8 zero points (one 4-bit block per row, low nibble): 9 for
// row 0 and 7 for row 1, so row 0 reads (8 - 9) * 2 = -2.0 (0xC0000000),
// 0 and row 1 (8 - 7) * 0.5 = 0.5, (9 - 7) * 0.5 = 1.0 (0x3F800000).
// CHECK-LABEL: func @gather_block_quantized_zero_points
// CHECK: folio_embedding_table_1: "0x40000000000000C000000000000000C000000000000000C000000000000000C000000000000000C000000000000000C000000000000000C000000000000000C0000000000000003F0000803F0000003F0000803F0000003F0000803F0000003F0000803F0000003F0000803F0000003F0000803F0000003F0000803F0000003F0000803F"
func.func @gather_block_quantized_zero_points(%ids: tensor<?xi64>) -> tensor<?x16xf32> {
  %d = arith.constant dense<152> : tensor<2x8xui8>
  %s = arith.constant dense<[[2.0], [0.5]]> : tensor<2x1xf32>
  %z = arith.constant dense<[[9], [7]]> : tensor<2x1xui8>
  %e = folio.onnx_node "GatherBlockQuantized"(%d, %ids, %s, %z) {node_name = "emb", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {bits = 4 : i64, block_size = 16 : i64}} : (tensor<2x8xui8>, tensor<?xi64>, tensor<2x1xf32>, tensor<2x1xui8>) -> tensor<?x16xf32>
  return %e : tensor<?x16xf32>
}

// -----

// int4 and uint4 data, one code per element (what ONNX Runtime's quantizer
// writes): -3 with scale 1 and 2 is -3.0 (0xC0400000) and -6.0
// (0xC0C00000); uint4 5 without zero points (default 0) with scale 0.5 is
// 2.5 (0x40200000). Blocks of 16 along 32 columns: two scales a row.
// CHECK-LABEL: func @gather_block_quantized_int4
// CHECK: folio_embedding_table_1: "0x40000000000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C0000040C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C00000C0C0"
// CHECK: folio_embedding_table_2: "0x4000000000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040000020400000204000002040"
func.func @gather_block_quantized_int4(%ids: tensor<?xi64>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %d = arith.constant dense<-3> : tensor<2x32xsi4>
  %s = arith.constant dense<[[1.0, 1.0], [2.0, 2.0]]> : tensor<2x2xf32>
  %e = folio.onnx_node "GatherBlockQuantized"(%d, %ids, %s) {node_name = "emb", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<2x32xsi4>, tensor<?xi64>, tensor<2x2xf32>) -> tensor<?x32xf32>
  %u = arith.constant dense<5> : tensor<2x32xui4>
  %us = arith.constant dense<0.5> : tensor<2x2xf32>
  %f = folio.onnx_node "GatherBlockQuantized"(%u, %ids, %us) {node_name = "emb2", domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<2x32xui4>, tensor<?xi64>, tensor<2x2xf32>) -> tensor<?x32xf32>
  return %e, %f : tensor<?x32xf32>, tensor<?x32xf32>
}
