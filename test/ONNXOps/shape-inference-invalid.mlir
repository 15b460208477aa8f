// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-test-onnx-shapes

// Tests that nodes shape inference cannot accept are refused with the op,
// what is wrong and what is supported.

func.func @unsupported_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{unsupported ONNX op 'Celu' (domain ai.onnx, opset 17); supported ops in ai.onnx: Abs, Add, And}}
  %0 = folio.onnx_node "Celu"(%x) {opset = 17 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @too_old_for_op(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{unsupported ONNX op 'RMSNormalization' (domain ai.onnx, opset 17); Folio supports it from opset 23}}
  %0 = folio.onnx_node "RMSNormalization"(%x, %s) {opset = 17 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unknown_domain(%x: tensor<4xf32>) {
  // expected-error @+1 {{unsupported ONNX op 'Foo' (domain com.example, opset 1); the domain is not supported (supported domains: ai.onnx, com.microsoft)}}
  %0 = folio.onnx_node "Foo"(%x) {domain = "com.example", opset = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @arity(%x: tensor<4xf32>) {
  // expected-error @+1 {{Add takes 2 inputs, got 1}}
  %0 = folio.onnx_node "Add"(%x) {opset = 17 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @required_input_absent(%x: tensor<4xf32>, %e: tensor<1xi64>) {
  // expected-error @+1 {{Slice input 1 is required but omitted}}
  %0 = folio.onnx_node "Slice"(%x, %e) {opset = 17 : i64, absent_inputs = array<i64: 1>} : (tensor<4xf32>, tensor<1xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @bad_broadcast(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) {
  // expected-error @+1 {{Add: inputs cannot be broadcast: dim 0 is 4 vs 5}}
  %0 = folio.onnx_node "Add"(%a, %b) {opset = 17 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @two_minus_ones(%x: tensor<4x8xf32>) {
  %t = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[-1, -1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  // expected-error @+1 {{Reshape: shape has more than one -1}}
  %0 = folio.onnx_node "Reshape"(%x, %t) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @bad_perm(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{Transpose: perm is not a permutation of 0..1}}
  %0 = folio.onnx_node "Transpose"(%x) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 0>}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @bad_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{Softmax: axis 2 is out of range for rank 2}}
  %0 = folio.onnx_node "Softmax"(%x) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @wrong_attr_type(%x: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{Gather: attribute 'axis' must be an int}}
  %0 = folio.onnx_node "Gather"(%x, %i) {opset = 17 : i64, onnx_attributes = {axis = "zero"}} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{Gather: indices must be integers, got 'f32'}}
  %0 = folio.onnx_node "Gather"(%x, %x) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @cast_unknown(%x: tensor<4xf32>) {
  // expected-error @+1 {{Cast: unsupported target type 8}}
  %0 = folio.onnx_node "Cast"(%x) {opset = 17 : i64, onnx_attributes = {to = 8 : i64}} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<4x8xf32>, %b: tensor<7x2xf32>) {
  // expected-error @+1 {{MatMul: inner dims differ: 8 vs 7}}
  %0 = folio.onnx_node "MatMul"(%a, %b) {opset = 17 : i64} : (tensor<4x8xf32>, tensor<7x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @gqa_heads(%q: tensor<1x3x32xf32>, %k: tensor<1x3x16xf32>, %v: tensor<1x3x16xf32>, %s: tensor<1xi32>, %t: tensor<i32>) {
  // expected-error @+1 {{GroupQueryAttention: num_heads (3) must be a positive multiple of kv_num_heads (2)}}
  %0:3 = folio.onnx_node "GroupQueryAttention"(%q, %k, %v, %s, %t) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3, 4>, onnx_attributes = {num_heads = 3 : i64, kv_num_heads = 2 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x16xf32>, tensor<1x3x16xf32>, tensor<1xi32>, tensor<i32>) -> (tensor<1x3x32xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>)
  return
}

// -----

func.func @gqa_needs_lengths(%q: tensor<1x3x32xf32>, %k: tensor<1x3x16xf32>, %v: tensor<1x3x16xf32>) {
  // expected-error @+1 {{GroupQueryAttention: needs seqlens_k (input 5) and total_sequence_length (input 6)}}
  %0:3 = folio.onnx_node "GroupQueryAttention"(%q, %k, %v) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64, kv_num_heads = 2 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x16xf32>, tensor<1x3x16xf32>) -> (tensor<1x3x32xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>)
  return
}

// -----

// A shape vector of 2^62 elements once became 2^62 dims (LLVM ERROR:
// SmallVector unable to grow).
func.func @expand_huge_rank(%x: tensor<1xf32>, %s: tensor<4611686018427387904xi64>) {
  // expected-error @+1 {{Expand: shape input has 4611686018427387904 elements, so the result would have rank 4611686018427387904; Folio supports ranks up to 64}}
  %0 = folio.onnx_node "Expand"(%x, %s) {opset = 17 : i64} : (tensor<1xf32>, tensor<4611686018427387904xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @expand_too_many_elements(%x: tensor<1xf32>) {
  %s = arith.constant dense<[2147483648, 2147483648]> : tensor<2xi64>
  // expected-error @+1 {{Expand: result 0 would have shape [2147483648, 2147483648], 4611686018427387904 elements; Folio supports at most 1099511627776 (2^40) elements per tensor}}
  %0 = folio.onnx_node "Expand"(%x, %s) {opset = 17 : i64} : (tensor<1xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_huge_rank(%x: tensor<1xf32>, %s: tensor<100xi64>) {
  // expected-error @+1 {{Reshape: shape input has 100 elements, so the result would have rank 100; Folio supports ranks up to 64}}
  %0 = folio.onnx_node "Reshape"(%x, %s) {opset = 17 : i64} : (tensor<1xf32>, tensor<100xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @gathernd_depth(%x: tensor<4x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{GatherND: indices' last dim 3 must be in [1, 2]}}
  %0 = folio.onnx_node "GatherND"(%x, %i) {opset = 18 : i64} : (tensor<4x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gathernd_batch_dims(%x: tensor<4x4xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+1 {{GatherND: batch_dims 2 must be in [0, 2)}}
  %0 = folio.onnx_node "GatherND"(%x, %i) {opset = 18 : i64, onnx_attributes = {batch_dims = 2 : i64}} : (tensor<4x4xf32>, tensor<4x1xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gathernd_indices_type(%x: tensor<4x4xf32>, %i: tensor<2x1xi32>) {
  // expected-error @+1 {{GatherND: indices must be int64, got 'i32'}}
  %0 = folio.onnx_node "GatherND"(%x, %i) {opset = 18 : i64} : (tensor<4x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @scatternd_reduction(%x: tensor<4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{ScatterND: reduction 'add' is not supported (only 'none')}}
  %0 = folio.onnx_node "ScatterND"(%x, %i, %u) {opset = 17 : i64, onnx_attributes = {reduction = "add"}} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatternd_updates_rank(%x: tensor<4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2xf32>) {
  // expected-error @+1 {{ScatterND: updates have rank 1, expected 2}}
  %0 = folio.onnx_node "ScatterND"(%x, %i, %u) {opset = 17 : i64} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @isnan_of_integers(%x: tensor<4xi64>) {
  // expected-error @+1 {{IsNaN: X must be}}
  %0 = folio.onnx_node "IsNaN"(%x) {opset = 17 : i64} : (tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

func.func @gather_elements_rank(%x: tensor<1x16x4xf32>, %i: tensor<1x3xi64>) {
  // expected-error @+1 {{GatherElements: data and indices must have the same rank, got 3 and 2}}
  %0 = folio.onnx_node "GatherElements"(%x, %i) {opset = 17 : i64, onnx_attributes = {axis = 1 : i64}} : (tensor<1x16x4xf32>, tensor<1x3xi64>) -> tensor<1x3xf32>
  return
}

// -----

func.func @gather_elements_axis(%x: tensor<1x16x4xf32>, %i: tensor<1x3x4xi64>) {
  // expected-error @+1 {{GatherElements: axis 3 is out of range for rank 3}}
  %0 = folio.onnx_node "GatherElements"(%x, %i) {opset = 17 : i64, onnx_attributes = {axis = 3 : i64}} : (tensor<1x16x4xf32>, tensor<1x3x4xi64>) -> tensor<1x3x4xf32>
  return
}

// -----

// K and V are indexed by Q's layout: a rank-1 V once read past its dims.
func.func @attention_v_rank(%q: tensor<1x3x32xf32>, %k: tensor<1x3x16xf32>, %v: tensor<16xf32>) {
  // expected-error @+1 {{Attention: V has rank 1; it must be rank 3 or 4 and match Q's rank 3}}
  %0 = folio.onnx_node "Attention"(%q, %k, %v) {opset = 23 : i64, onnx_attributes = {q_num_heads = 4 : i64, kv_num_heads = 2 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x16xf32>, tensor<16xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @attention_k_rank(%q: tensor<1x3x32xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x3x16xf32>) {
  // expected-error @+1 {{Attention: K has rank 4; it must be rank 3 or 4 and match Q's rank 3}}
  %0 = folio.onnx_node "Attention"(%q, %k, %v) {opset = 23 : i64, onnx_attributes = {q_num_heads = 4 : i64, kv_num_heads = 2 : i64}} : (tensor<1x3x32xf32>, tensor<1x2x3x8xf32>, tensor<1x3x16xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_nbits_bits(%a: tensor<2x32xf32>, %b: tensor<2x2x6xui8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{MatMulNBits: bits 3 is not supported; supported: 4, 8}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, bits = 3 : i64, block_size = 16 : i64}} : (tensor<2x32xf32>, tensor<2x2x6xui8>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_nbits_accuracy(%a: tensor<2x32xf32>, %b: tensor<2x2x8xui8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{MatMulNBits: accuracy_level 9 is not a level; ONNX Runtime's are 0 (unset), 1 (f32), 2 (f16), 3 (bf16) and 4 (int8)}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, block_size = 16 : i64, accuracy_level = 9 : i64}} : (tensor<2x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_nbits_block(%a: tensor<2x32xf32>, %b: tensor<2x2x8xui8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{MatMulNBits: block_size 24 must be a power of 2 >= 16}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, block_size = 24 : i64}} : (tensor<2x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_nbits_g_idx(%a: tensor<2x32xf32>, %b: tensor<2x2x8xui8>, %s: tensor<4xf32>, %g: tensor<32xi32>) {
  // expected-error @+1 {{MatMulNBits: g_idx (input 4, act-order weights) is not supported; export without act-order}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s, %g) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3>, onnx_attributes = {K = 32 : i64, N = 2 : i64, block_size = 16 : i64}} : (tensor<2x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>, tensor<32xi32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_nbits_b_size(%a: tensor<2x32xf32>, %b: tensor<2x1x8xui8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{MatMulNBits: B has 16 elements; N 2 x 2 blocks x 8 bytes = 32 expected}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, block_size = 16 : i64}} : (tensor<2x32xf32>, tensor<2x1x8xui8>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @matmul_nbits_float_zero_points(%a: tensor<2x32xf32>, %b: tensor<2x2x8xui8>, %s: tensor<4xf32>, %z: tensor<4xf32>) {
  // expected-error @+1 {{MatMulNBits: zero_points of type 'f32' are not supported; supported: uint8, packed as B is}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s, %z) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, block_size = 16 : i64}} : (tensor<2x32xf32>, tensor<2x2x8xui8>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @gbq_data_type(%d: tensor<8x32xi8>, %i: tensor<2x3xi64>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{GatherBlockQuantized: data of type 'i8' is not supported; supported: int4, uint4, uint8 (packed as MatMulNBits packs B)}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<8x32xi8>, tensor<2x3xi64>, tensor<8x2xf32>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @gbq_bits(%d: tensor<8x32xsi4>, %i: tensor<2x3xi64>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{GatherBlockQuantized: bits 8 is not supported for 'si4' data; supported: 4}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {bits = 8 : i64, block_size = 16 : i64}} : (tensor<8x32xsi4>, tensor<2x3xi64>, tensor<8x2xf32>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @gbq_block(%d: tensor<8x16xui8>, %i: tensor<2x3xi64>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{GatherBlockQuantized: block_size 24 must be a power of 2 >= 16}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 24 : i64}} : (tensor<8x16xui8>, tensor<2x3xi64>, tensor<8x2xf32>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @gbq_rank(%d: tensor<2x8x32xsi4>, %i: tensor<2x3xi64>, %s: tensor<2x8x2xf32>) {
  // expected-error @+1 {{GatherBlockQuantized: data of rank 3 is not supported; supported: a rank-2 embedding table}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<2x8x32xsi4>, tensor<2x3xi64>, tensor<2x8x2xf32>) -> tensor<2x3x8x32xf32>
  return
}

// -----

func.func @gbq_axes(%d: tensor<8x32xsi4>, %i: tensor<2x3xi64>, %s: tensor<1x32xf32>) {
  // expected-error @+1 {{GatherBlockQuantized: gather_axis 0 with quantize_axis 0 is not supported; supported: a table gathered along axis 0 and quantized along axis 1 (an embedding)}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64, quantize_axis = 0 : i64}} : (tensor<8x32xsi4>, tensor<2x3xi64>, tensor<1x32xf32>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @gbq_scales(%d: tensor<8x16xui8>, %i: tensor<2x3xi64>, %s: tensor<8x1xf32>) {
  // expected-error @+1 {{GatherBlockQuantized: scales must be [8, 2] (rows x blocks of 16 along 32 columns)}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<8x16xui8>, tensor<2x3xi64>, tensor<8x1xf32>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @gbq_zero_points(%d: tensor<8x32xui4>, %i: tensor<2x3xi64>, %s: tensor<8x2xf32>, %z: tensor<8x2xui8>) {
  // expected-error @+1 {{GatherBlockQuantized: zero_points of type 'ui8' must have data's type 'ui4'}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s, %z) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<8x32xui4>, tensor<2x3xi64>, tensor<8x2xf32>, tensor<8x2xui8>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @gbq_packed_zero_points(%d: tensor<8x16xui8>, %i: tensor<2x3xi64>, %s: tensor<8x2xf32>, %z: tensor<8x2xui8>) {
  // expected-error @+1 {{GatherBlockQuantized: zero_points has 16 elements; 8 rows x 1 = 8 expected}}
  %0 = folio.onnx_node "GatherBlockQuantized"(%d, %i, %s, %z) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {block_size = 16 : i64}} : (tensor<8x16xui8>, tensor<2x3xi64>, tensor<8x2xf32>, tensor<8x2xui8>) -> tensor<2x3x32xf32>
  return
}

// -----

func.func @matmul_nbits_k(%a: tensor<2x30xf32>, %b: tensor<2x2x8xui8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{MatMulNBits: A's last dim 30 is not K = 32}}
  %0 = folio.onnx_node "MatMulNBits"(%a, %b, %s) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {K = 32 : i64, N = 2 : i64, block_size = 16 : i64}} : (tensor<2x30xf32>, tensor<2x2x8xui8>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @dequantize_linear_output_dtype(%x: tensor<8x4xi8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{DequantizeLinear: output_dtype 10 differs from x_scale's type; Folio takes the scale's type (output_dtype 0)}}
  %0 = folio.onnx_node "DequantizeLinear"(%x, %s) {opset = 23 : i64, onnx_attributes = {output_dtype = 10 : i64}} : (tensor<8x4xi8>, tensor<4xf32>) -> tensor<8x4xf16>
  return
}

// -----

func.func @dequantize_linear_zero_point_type(%x: tensor<8x4xi8>, %s: tensor<4xf32>, %z: tensor<4xui8>) {
  // expected-error @+1 {{DequantizeLinear: x_zero_point must have x's element type}}
  %0 = folio.onnx_node "DequantizeLinear"(%x, %s, %z) {opset = 13 : i64} : (tensor<8x4xi8>, tensor<4xf32>, tensor<4xui8>) -> tensor<8x4xf32>
  return
}

// -----

func.func @integer_activations(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{unsupported ONNX op 'DynamicQuantizeLinear' (domain ai.onnx, opset 21); integer activation kernels (dynamic quantization, QOperator format) are not supported: Folio takes weights quantized by DequantizeLinear over constants or com.microsoft MatMulNBits, and activations quantized in QDQ format (QuantizeLinear -> DequantizeLinear)}}
  %0:3 = folio.onnx_node "DynamicQuantizeLinear"(%x) {opset = 21 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xui8>, tensor<f32>, tensor<ui8>)
  return
}

// -----

func.func @quantize_linear_int4(%x: tensor<4x8xf32>, %s: tensor<f32>, %z: tensor<i4>) {
  // expected-error @+1 {{QuantizeLinear: quantizing to 'i4' is not supported; supported: int8, uint8}}
  %0 = folio.onnx_node "QuantizeLinear"(%x, %s, %z) {opset = 21 : i64} : (tensor<4x8xf32>, tensor<f32>, tensor<i4>) -> tensor<4x8xi4>
  return
}

// -----

func.func @mha_bias(%q: tensor<1x3x32xf32>, %b: tensor<96xf32>) {
  // expected-error @+1 {{MultiHeadAttention: bias (input 3) is not supported; supported: query, key, value, attention_bias, past_key, past_value}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q, %b) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<96xf32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @mha_padding_mask(%q: tensor<1x3x32xf32>, %m: tensor<1x3xi32>) {
  // expected-error @+1 {{MultiHeadAttention: key_padding_mask (input 4) is not supported}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q, %m) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3>, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3xi32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @mha_cache_indirection(%q: tensor<1x3x32xf32>, %c: tensor<1x1x3xi32>) {
  // expected-error @+1 {{MultiHeadAttention: cache_indirection (input 9) is not supported}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q, %c) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3, 4, 5, 6, 7, 8>, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x1x3xi32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @mha_packed_qkv(%q: tensor<1x3x4x3x8xf32>) {
  // expected-error @+1 {{MultiHeadAttention: needs key and value (inputs 1 and 2): packed QKV in the query is not supported}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x4x3x8xf32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @mha_heads(%q: tensor<1x3x30xf32>) {
  // expected-error @+1 {{MultiHeadAttention: query hidden size 30 is not a multiple of num_heads (4)}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x30xf32>, tensor<1x3x30xf32>, tensor<1x3x30xf32>) -> tensor<1x3x30xf32>
  return
}

// -----

func.func @mha_qk_output(%q: tensor<1x3x32xf32>) {
  // expected-error @+1 {{MultiHeadAttention: the qk output is not supported}}
  %0:4 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>) -> (tensor<1x3x32xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>, tensor<1x4x3x3xf32>)
  return
}

// -----

func.func @mha_past_key_alone(%q: tensor<1x3x32xf32>, %p: tensor<1x4x2x8xf32>) {
  // expected-error @+1 {{MultiHeadAttention: past_key and past_value come together}}
  %0:3 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q, %p) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3, 4, 5>, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x4x2x8xf32>) -> (tensor<1x3x32xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>)
  return
}

// -----

func.func @mha_unidirectional(%q: tensor<1x3x32xf32>) {
  // expected-error @+1 {{MultiHeadAttention: unidirectional must be 0 or 1, got 2}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64, unidirectional = 2 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @mha_negative_scale(%q: tensor<1x3x32xf32>) {
  // expected-error @+1 {{MultiHeadAttention: scale must be >= 0 (0: 1/sqrt(head_size))}}
  %0 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64, scale = -1.0 : f32}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>) -> tensor<1x3x32xf32>
  return
}

// -----

func.func @mha_past_rank(%q: tensor<1x3x32xf32>, %p: tensor<1x2x32xf32>) {
  // expected-error @+1 {{MultiHeadAttention: past key/value must be rank 4 [batch, num_heads, past_seq, head_size]}}
  %0:3 = folio.onnx_node "MultiHeadAttention"(%q, %q, %q, %p, %p) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3, 4, 5>, onnx_attributes = {num_heads = 4 : i64}} : (tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>) -> (tensor<1x3x32xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>)
  return
}
