// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-page-kv

// Tests that graphs page-kv cannot serve are refused, naming why.

// expected-error @+1 {{no folio.attention to page: run the raise passes first, or the model's attention was not recognised}}
func.func @main(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids"}) -> (tensor<?x?xi64> {folio.onnx_name = "logits"}) {
  return %ids : tensor<?x?xi64>
}

// -----

// expected-error @+1 {{input 1 ('token_type_ids') is not part of the decoder contract; expected input_ids, attention_mask, position_ids and past_key_values.N.key|value}}
func.func @main(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids"}, %tt: tensor<?x?xi64> {folio.onnx_name = "token_type_ids"}) -> (tensor<?x?xi64> {folio.onnx_name = "logits"}) {
  return %ids : tensor<?x?xi64>
}

// -----

// expected-error @+1 {{the model has no 'logits' output}}
func.func @main(%ids: tensor<?x?xi64> {folio.onnx_name = "input_ids"}) -> (tensor<?x?xi64> {folio.onnx_name = "present.0.key"}) {
  return %ids : tensor<?x?xi64>
}

// -----

// expected-error @+1 {{the model has no 'input_ids' input}}
func.func @main(%m: tensor<?x?xi64> {folio.onnx_name = "attention_mask"}) -> (tensor<?x?xi64> {folio.onnx_name = "logits"}) {
  return %m : tensor<?x?xi64>
}

// -----

// Tests that a ReduceMean over the sequence axis (a token-mixing op outside
// attention) is named.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"}) -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %xt, %xt, %xt {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  // expected-error @+1 {{is not token-wise: it reduces over the token axis; outside attention, each token's row must depend only on that token}}
  %m = folio.onnx_node "ReduceMean"(%o3) {opset = 17 : i64, onnx_attributes = {axes = array<i64: 1>}} : (tensor<?x?x8xf32>) -> tensor<?x1x8xf32>
  %s = folio.onnx_node "Add"(%o3, %m) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<?x1x8xf32>) -> tensor<?x?x8xf32>
  %logits = folio.linear %s, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}

// -----

// Tests that attention_mask used outside masks and positions is refused.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "attention_mask"}) -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %xt, %xt, %xt {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  // expected-error @+1 {{input 'attention_mask' is still used here after paging the KV cache}}
  %mf = folio.onnx_node "Cast"(%mask) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<?x?xi64>) -> tensor<?x?xf32>
  %mu = folio.onnx_node "Unsqueeze"(%mf, %merge) {opset = 17 : i64} : (tensor<?x?xf32>, tensor<3xi64>) -> tensor<?x?x1xf32>
  %s = folio.onnx_node "Mul"(%o3, %mu) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %logits = folio.linear %s, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}
