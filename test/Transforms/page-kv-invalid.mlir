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

// -----

// Tests that a cached graph whose rotary positions are Range(0, seq),
// ignoring the past, is refused: after a prefill every decode step would
// get position 0.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                %pk: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"},
                %pv: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.value"})
    -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %zero = arith.constant dense<0> : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %axes0 = arith.constant dense<0> : tensor<1xi64>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %hshape = folio.onnx_node "Shape"(%h) {opset = 17 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %seq = folio.onnx_node "Gather"(%hshape, %one) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %range = folio.onnx_node "Range"(%zero, %seq, %one) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = folio.onnx_node "Unsqueeze"(%range, %axes0) {node_name = "positions_from_zero", opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  // expected-error @+1 {{the positions of this rotary are computed inside the graph (by node 'positions_from_zero') and cannot be proven equal to each token's position in its sequence, which is what serving provides: with 3 past and 4 new tokens it gives token 0 the value 0, not its position 3; supported are a position_ids input, past length + Range(seq), Range(0, seq) without a KV cache, and cumsum(attention_mask) - 1}}
  %r = folio.rotary %xt, %pos {rotary_dim = 8 : i64} : (tensor<?x1x?x8xf32>, tensor<1x?xi64>) -> tensor<?x1x?x8xf32>
  %kc = folio.onnx_node "Concat"(%pk, %r) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %vc = folio.onnx_node "Concat"(%pv, %xt) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %r, %kc, %vc {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}

// -----

// Tests that positions computed from the token values (a count of non-pad
// tokens) are refused: they are not what serving provides.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"}) -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %zero = arith.constant dense<0> : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %real = folio.onnx_node "Greater"(%ids, %zero) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %count = folio.onnx_node "Cast"(%real) {opset = 17 : i64, onnx_attributes = {to = 7 : i64}} : (tensor<?x?xi1>) -> tensor<?x?xi64>
  %cs = folio.onnx_node "CumSum"(%count, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %pos = folio.onnx_node "Sub"(%cs, %one) {node_name = "positions_from_ids", opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  // expected-error @+1 {{the positions of this rotary are computed inside the graph (by node 'positions_from_ids') and cannot be proven equal to each token's position in its sequence, which is what serving provides: it cannot be evaluated with 0 past and 1 new tokens: it depends on the values of input 'input_ids'}}
  %r = folio.rotary %xt, %pos {rotary_dim = 8 : i64} : (tensor<?x1x?x8xf32>, tensor<?x?xi64>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %r, %r, %xt {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}

// -----

// Tests that a position embedding whose ids are off by one from the
// positions (Range(1, seq + 1)) is refused.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"}) -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %ptable = arith.constant dense<0.25> : tensor<32x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %axes0 = arith.constant dense<0> : tensor<1xi64>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %hshape = folio.onnx_node "Shape"(%h) {opset = 17 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %seq = folio.onnx_node "Gather"(%hshape, %one) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %end = folio.onnx_node "Add"(%seq, %one) {opset = 17 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %range = folio.onnx_node "Range"(%one, %end, %one) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pids = folio.onnx_node "Unsqueeze"(%range, %axes0) {node_name = "ids_from_one", opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  // expected-error @+1 {{the ids of this position embedding are computed inside the graph (by node 'ids_from_one') and cannot be proven equal to each token's position in its sequence, which is what serving provides: with 0 past and 1 new tokens it gives token 0 the value 1, not its position 0}}
  %pe = folio.embedding %ptable[%pids] : (tensor<32x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %x = folio.onnx_node "Add"(%h, %pe) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<1x?x8xf32>) -> tensor<?x?x8xf32>
  %x4 = folio.onnx_node "Reshape"(%x, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %xt, %xt, %xt {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}

// -----

// Tests that Range(0, seq) used as data outside positions (a per-token
// bias by index) is refused: over the flattened batch it numbers the
// tokens of every sequence together.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"}) -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %zero = arith.constant dense<0> : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %axes = arith.constant dense<[0, 2]> : tensor<2xi64>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %hshape = folio.onnx_node "Shape"(%h) {opset = 17 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %seq = folio.onnx_node "Gather"(%hshape, %one) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  // expected-error @+1 {{is not token-wise: ONNX op Range makes a token axis from a size, so each token's value is its index in the flattened batch, which depends on how the batch is laid out rather than on the token}}
  %range = folio.onnx_node "Range"(%zero, %seq, %one) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %idx = folio.onnx_node "Unsqueeze"(%range, %axes) {opset = 17 : i64} : (tensor<?xi64>, tensor<2xi64>) -> tensor<1x?x1xi64>
  %bias = folio.onnx_node "Cast"(%idx) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %x = folio.onnx_node "Add"(%h, %bias) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<1x?x1xf32>) -> tensor<?x?x8xf32>
  %x4 = folio.onnx_node "Reshape"(%x, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %xt, %xt, %xt {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}

// -----

// Tests that the token count used as data (dividing by the sequence
// length) is refused: each token's result would depend on how many other
// tokens share the batch.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"}) -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %head = arith.constant dense<0.4> : tensor<8x16xf32>
  %one = arith.constant dense<1> : tensor<i64>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %hshape = folio.onnx_node "Shape"(%h) {opset = 17 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %seq = folio.onnx_node "Gather"(%hshape, %one) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %n = folio.onnx_node "Cast"(%seq) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<i64>) -> tensor<f32>
  // expected-error @+1 {{is not token-wise: its input 1 is computed from the number of tokens in the batch, so each token's result depends on the rest of the batch}}
  %x = folio.onnx_node "Div"(%h, %n) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %x4 = folio.onnx_node "Reshape"(%x, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %xt, %xt, %xt {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %logits : tensor<?x?x16xf32>
}

// -----

// Tests that a graph reading the past length off a past input's shape for
// something other than masks and positions (here, scaling the logits) is
// refused: serving has no one past length, each sequence has its own.

func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                %pk: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"},
                %pv: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.value"})
    -> (tensor<?x?x8xf32> {folio.onnx_name = "logits"}, tensor<?x1x?x8xf32> {folio.onnx_name = "present.0.key"}, tensor<?x1x?x8xf32> {folio.onnx_name = "present.0.value"}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
  %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 18 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
  %xt = folio.onnx_node "Transpose"(%x4) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
  %kc = folio.onnx_node "Concat"(%pk, %xt) {opset = 18 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %vc = folio.onnx_node "Concat"(%pv, %xt) {opset = 18 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %o = folio.attention %xt, %kc, %vc {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
  %ot = folio.onnx_node "Transpose"(%o) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
  %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
  %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 18 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  // expected-error @+1 {{input 'past_key_values.0.key' is still used here after paging the KV cache}}
  %plen = folio.onnx_node "Shape"(%pk) {opset = 18 : i64, onnx_attributes = {start = 2 : i64, end = 3 : i64}} : (tensor<?x1x?x8xf32>) -> tensor<1xi64>
  %f = folio.onnx_node "Cast"(%plen) {opset = 18 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<1xi64>) -> tensor<1xf32>
  %scaled = folio.onnx_node "Mul"(%o3, %f) {opset = 18 : i64} : (tensor<?x?x8xf32>, tensor<1xf32>) -> tensor<?x?x8xf32>
  return %scaled, %kc, %vc : tensor<?x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>
}
