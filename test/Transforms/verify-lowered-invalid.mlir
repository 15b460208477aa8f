// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-lower-onnx --folio-verify-lowered

// Tests that a node the lowering could not handle stops the compiler with
// node, op, opset and the reason.

func.func @strided_slice(%x: tensor<1x?x8xf32> {folio.dim_names = ["", "num_tokens", ""]}) -> tensor<1x?x4xf32> {
  %st = arith.constant dense<0> : tensor<1xi64>
  %en = arith.constant dense<8> : tensor<1xi64>
  %ax = arith.constant dense<2> : tensor<1xi64>
  %sp = arith.constant dense<2> : tensor<1xi64>
  // expected-error @+1 {{ONNX node '/model/every_other' (op Slice, domain ai.onnx, opset 17) was not lowered to folio ops: slices with step 2; folio.slice takes contiguous ranges (step 1)}}
  %s = folio.onnx_node "Slice"(%x, %st, %en, %ax, %sp) {node_name = "/model/every_other", opset = 17 : i64} : (tensor<1x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x4xf32>
  return %s : tensor<1x?x4xf32>
}

// -----

// Tests that an op without a lowering names what Folio lowers instead.

func.func @no_lowering(%x: tensor<1x?x8xf32> {folio.dim_names = ["", "num_tokens", ""]}) -> tensor<1x?x8xf32> {
  // expected-error @+1 {{ONNX node '/model/sm' (op Softmax, domain ai.onnx, opset 17) was not lowered to folio ops: Folio has no lowering for Softmax in ai.onnx; it lowers Abs, Add, Cast, Concat, Div, Erf, Exp, Flatten, Gather, Gelu, Identity, Max, Min, Mul, Neg, Pow, Reciprocal, Relu, Reshape, Sigmoid, Slice, Split, Sqrt, Squeeze, Sub, Tanh, Transpose, Unsqueeze}}
  %m = folio.onnx_node "Softmax"(%x) {node_name = "/model/sm", opset = 17 : i64, onnx_attributes = {axis = -1 : i64}} : (tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  return %m : tensor<1x?x8xf32>
}

// -----

// Tests that a reshape needing two run-time dims is refused.

func.func @two_dynamic_dims(%x: tensor<?x?x8xf32>, %shape: tensor<4xi64>) -> tensor<?x?x2x4xf32> {
  // expected-error @+1 {{(op Reshape, domain ai.onnx, opset 17) was not lowered to folio ops: its result shape [?, ?, 2, 4] has 2 dims unknown at compile time}}
  %r = folio.onnx_node "Reshape"(%x, %shape) {node_name = "r", opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x2x4xf32>
  return %r : tensor<?x?x2x4xf32>
}

// -----

// Tests that upstream ops other than constants are refused.

func.func @upstream_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.addf' is not part of the lowered form (folio ops, tensor constants and the return)}}
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Tests that the logical attention op is refused after page-kv.

func.func @attention_left(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{folio.attention is left after page-kv}}
  %a = folio.attention %q, %k, %k {scale = 0.35 : f64} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %a : tensor<1x2x?x8xf32>
}

// -----

// Tests that folio ops no plan can run yet are refused at compile time.

func.func @quantize_left(%x: tensor<4x8xf32>, %s: tensor<4x1xf32>) -> tensor<4x8xi8> {
  // expected-error @+1 {{'folio.quantize' has no kernel in plans yet}}
  %q = folio.quantize %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

// -----

// Tests that verification stays out of the serving entry: it runs in the
// verify entries, which pass the check.

func.func @forward(%l: tensor<?x5x256xf32>, %d: tensor<?x4xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'folio.spec_verify' runs in the verify entries (verify_greedy, verify_sample, verify_sample_onehot, added by folio-speculative), not in the serving entry 'forward'}}
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x5x256xf32>, tensor<?x4xi32> -> tensor<?xi32>, tensor<?x5xi32>
  return %n : tensor<?xi32>
}

func.func @verify_greedy(%l: tensor<?x?x256xf32>, %d: tensor<?x?xi32>) -> (tensor<?xi32>, tensor<?x?xi32>) {
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x?x256xf32>, tensor<?x?xi32> -> tensor<?xi32>, tensor<?x?xi32>
  return %n, %t : tensor<?xi32>, tensor<?x?xi32>
}

// -----

// Tests that folio.dequantize over constants (a weight the model stores
// quantized, which the plan stores packed) passes, and over a computed
// value is refused.

func.func @dequantize_weight(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %q = arith.constant dense<3> : tensor<4x8xi4>
  %s = arith.constant dense<0.5> : tensor<4x1xf32>
  %w = folio.dequantize %q, %s : (tensor<4x8xi4>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = folio.linear %x, %w {weight_layout = #folio.weight_layout<out_in>} : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @dequantize_activation(%q: tensor<4x8xi8>) -> tensor<4x8xf32> {
  %s = arith.constant dense<0.5> : tensor<f32>
  // expected-error @+1 {{'folio.dequantize' has no kernel in plans yet; the serving entry cannot use it (only weights, over constants, are dequantized: the plan stores them)}}
  %w = folio.dequantize %q, %s : (tensor<4x8xi8>, tensor<f32>) -> tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}
