// RUN: folio-opt %s --split-input-file --folio-page-kv --folio-verify-serving-contract | FileCheck %s

// Tests one raised cached Llama-style layer becoming the serving entry:
// the contract's arguments and one cache, kv_write of the new K/V rows (not
// the concat with past), paged_attention, logits gathered by row, and no
// past/present/attention_mask left.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?xi32> {folio.dim_names = ["num_tokens"], folio.onnx_name = "tokens"}
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi32> {folio.dim_names = ["num_tokens"], folio.onnx_name = "positions"}
// CHECK-SAME: %[[QSL:[^:]*]]: tensor<?xi32> {{.*}}"query_start_loc"
// CHECK-SAME: %[[LENS:[^:]*]]: tensor<?xi32> {{.*}}"seq_lens"
// CHECK-SAME: %[[BT:[^:]*]]: tensor<?x?xi32> {{.*}}"block_tables"
// CHECK-SAME: %[[SLOTS:[^:]*]]: tensor<?xi64> {{.*}}"slot_mapping"
// CHECK-SAME: %[[ROWS:[^:]*]]: tensor<?xi32> {{.*}}"logits_indices"
// CHECK-SAME: %[[CACHE:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.dim_names = [], folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: -> (tensor<?x64xf32> {folio.onnx_name = "logits"})
// CHECK: folio.embedding
// CHECK: folio.rotary
// CHECK: folio.kv_write %[[CACHE]], %{{.*}}, %{{.*}}, %[[SLOTS]] : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
// CHECK: folio.paged_attention %{{.*}}, %[[CACHE]], %[[BT]], %[[LENS]], %[[QSL]] {scale = 3.535500e-01 : f64} : (tensor<?x4x8xf32>, {{.*}}) -> tensor<?x4x8xf32>
// CHECK-NOT: "Concat"
// CHECK: %[[L:.*]] = folio.gather_rows %{{.*}}[%[[ROWS]]] : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
// CHECK: return %[[L]]
module {
  func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                  %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "total"], folio.onnx_name = "attention_mask"},
                  %pos: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "position_ids"},
                  %pk: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"},
                  %pv: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.value"})
      -> (tensor<?x?x64xf32> {folio.onnx_name = "logits"}, tensor<?x2x?x8xf32> {folio.onnx_name = "present.0.key"}, tensor<?x2x?x8xf32> {folio.onnx_name = "present.0.value"}) {
    %table = arith.constant dense<0.5> : tensor<64x32xf32>
    %wq = arith.constant dense<0.1> : tensor<32x32xf32>
    %wk = arith.constant dense<0.2> : tensor<32x16xf32>
    %wo = arith.constant dense<0.3> : tensor<32x32xf32>
    %norm = arith.constant dense<1.0> : tensor<32xf32>
    %head = arith.constant dense<0.4> : tensor<32x64xf32>
    %split_q = arith.constant dense<[0, 0, 4, 8]> : tensor<4xi64>
    %split_kv = arith.constant dense<[0, 0, 2, 8]> : tensor<4xi64>
    %merge = arith.constant dense<[0, 0, 32]> : tensor<3xi64>
    %h = folio.embedding %table[%ids] : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
    %x = folio.rms_norm %h, %norm : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %q2 = folio.linear %x, %wq : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
    %k2 = folio.linear %x, %wk : (tensor<?x?x32xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
    %v2 = folio.linear %x, %wk : (tensor<?x?x32xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
    %q4 = folio.onnx_node "Reshape"(%q2, %split_q) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
    %k4 = folio.onnx_node "Reshape"(%k2, %split_kv) {opset = 17 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
    %v4 = folio.onnx_node "Reshape"(%v2, %split_kv) {opset = 17 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x?x2x8xf32>
    %qt = folio.onnx_node "Transpose"(%q4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x4x8xf32>) -> tensor<?x4x?x8xf32>
    %kt = folio.onnx_node "Transpose"(%k4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
    %vt = folio.onnx_node "Transpose"(%v4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
    %qr = folio.rotary %qt, %pos {rotary_dim = 8 : i64} : (tensor<?x4x?x8xf32>, tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
    %kr = folio.rotary %kt, %pos {rotary_dim = 8 : i64} : (tensor<?x2x?x8xf32>, tensor<?x?xi64>) -> tensor<?x2x?x8xf32>
    %kc = folio.onnx_node "Concat"(%pk, %kr) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
    %vc = folio.onnx_node "Concat"(%pv, %vt) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
    %o4 = folio.attention %qr, %kc, %vc, %mask {scale = 0.35355 : f64} : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
    %ot = folio.onnx_node "Transpose"(%o4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x4x?x8xf32>) -> tensor<?x?x4x8xf32>
    %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x4x8xf32>, tensor<3xi64>) -> tensor<?x?x32xf32>
    %o = folio.linear %o3, %wo : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
    %r = folio.onnx_node "Add"(%h, %o) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
    %f = folio.rms_norm %r, %norm : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %logits = folio.linear %f, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
    return %logits, %kc, %vc : tensor<?x?x64xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
  }
}

// -----

// Tests a graph without cache whose positions come from attention_mask
// (CumSum - 1): the computation is replaced by `positions`, the new K/V are
// the attention's operands, and the mask input disappears.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {{.*}}"tokens"
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi32> {{.*}}"positions"
// CHECK-NOT: "CumSum"
// CHECK: %[[P64:.*]] = arith.extsi %[[POS]]
// CHECK: %[[P2:.*]] = tensor.expand_shape %[[P64]]
// CHECK: folio.rotary %{{.*}}, %{{.*}}
// CHECK: folio.kv_write
// CHECK: folio.paged_attention {{.*}} {scale = 5.000000e-01 : f64, sliding_window = 8 : i64}
module {
  func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                  %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "attention_mask"})
      -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
    %table = arith.constant dense<0.5> : tensor<16x8xf32>
    %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
    %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
    %one = arith.constant dense<1> : tensor<i64>
    %axis = arith.constant dense<1> : tensor<i64>
    %head = arith.constant dense<0.4> : tensor<8x16xf32>
    %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
    %cs = folio.onnx_node "CumSum"(%mask, %axis) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
    %pos = folio.onnx_node "Sub"(%cs, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
    %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
    %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
    %r = folio.rotary %xt, %pos {rotary_dim = 8 : i64} : (tensor<?x1x?x8xf32>, tensor<?x?xi64>) -> tensor<?x1x?x8xf32>
    %o = folio.attention %r, %r, %xt {scale = 0.5 : f64, sliding_window = 8 : i64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
    %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
    %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
    %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %logits : tensor<?x?x16xf32>
  }
}

// -----

// Tests a cached graph without position_ids whose rotary positions are
// Range(past_len, past_len + seq) from the past's shape (transformers'
// cache_position): proven equal to `positions` and replaced, so the past
// shape is no longer read; the positions' proven context is recorded.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {{.*}}"tokens"
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi32> {{.*}}"positions"
// CHECK-SAME: attributes {folio.max_context = 1048576 : i64}
// CHECK-NOT: "Range"
// CHECK: %[[P64:.*]] = arith.extsi %[[POS]] :
// CHECK: %[[P2:.*]] = tensor.expand_shape %[[P64]] {{\[}}
// CHECK: folio.rotary %{{.*}}, %[[P2]] {
// CHECK: folio.paged_attention
module {
  func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                  %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "total"], folio.onnx_name = "attention_mask"},
                  %pk: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"},
                  %pv: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.value"})
      -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}, tensor<?x1x?x8xf32> {folio.onnx_name = "present.0.key"}, tensor<?x1x?x8xf32> {folio.onnx_name = "present.0.value"}) {
    %table = arith.constant dense<0.5> : tensor<16x8xf32>
    %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
    %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
    %head = arith.constant dense<0.4> : tensor<8x16xf32>
    %one = arith.constant dense<1> : tensor<i64>
    %two = arith.constant dense<2> : tensor<i64>
    %axes0 = arith.constant dense<0> : tensor<1xi64>
    %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
    %kshape = folio.onnx_node "Shape"(%pk) {opset = 17 : i64} : (tensor<?x1x?x8xf32>) -> tensor<4xi64>
    %past = folio.onnx_node "Gather"(%kshape, %two) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
    %hshape = folio.onnx_node "Shape"(%h) {opset = 17 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
    %seq = folio.onnx_node "Gather"(%hshape, %one) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %end = folio.onnx_node "Add"(%past, %seq) {opset = 17 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %range = folio.onnx_node "Range"(%past, %end, %one) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    %pos = folio.onnx_node "Unsqueeze"(%range, %axes0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
    %x4 = folio.onnx_node "Reshape"(%h, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
    %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
    %r = folio.rotary %xt, %pos {rotary_dim = 8 : i64} : (tensor<?x1x?x8xf32>, tensor<1x?xi64>) -> tensor<?x1x?x8xf32>
    %kc = folio.onnx_node "Concat"(%pk, %r) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
    %vc = folio.onnx_node "Concat"(%pv, %xt) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
    %o = folio.attention %r, %kc, %vc, %mask {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x?xi64>) -> tensor<?x1x?x8xf32>
    %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
    %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
    %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %logits, %kc, %vc : tensor<?x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>
  }
}

// -----

// Tests OPT's learned positions in a cached graph without position_ids:
// (cumsum(attention_mask) * attention_mask - 1)[:, past:] + 2 indexes the
// position table. The value before the offset is proven equal to
// `positions` and replaced; the offset stays.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {{.*}}"tokens"
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi32> {{.*}}"positions"
// CHECK-NOT: "CumSum"
// CHECK-NOT: "Slice"
// CHECK: %[[P64:.*]] = arith.extsi %[[POS]] :
// CHECK: %[[P2:.*]] = tensor.expand_shape %[[P64]] {{\[}}
// CHECK: %[[PC:.*]] = tensor.cast %[[P2]] :
// CHECK: %[[IDS:.*]] = folio.onnx_node "Add"(%[[PC]], %{{.*}})
// CHECK: folio.embedding %{{.*}}[%[[IDS]]]
module {
  func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                  %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "total"], folio.onnx_name = "attention_mask"},
                  %pk: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"},
                  %pv: tensor<?x1x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.value"})
      -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}, tensor<?x1x?x8xf32> {folio.onnx_name = "present.0.key"}, tensor<?x1x?x8xf32> {folio.onnx_name = "present.0.value"}) {
    %table = arith.constant dense<0.5> : tensor<16x8xf32>
    %ptable = arith.constant dense<0.25> : tensor<34x8xf32>
    %split = arith.constant dense<[0, 0, 1, 8]> : tensor<4xi64>
    %merge = arith.constant dense<[0, 0, 8]> : tensor<3xi64>
    %head = arith.constant dense<0.4> : tensor<8x16xf32>
    %one = arith.constant dense<1> : tensor<i64>
    %two = arith.constant dense<2> : tensor<i64>
    %axis1 = arith.constant dense<1> : tensor<1xi64>
    %axes0 = arith.constant dense<0> : tensor<1xi64>
    %max = arith.constant dense<9223372036854775807> : tensor<1xi64>
    %h = folio.embedding %table[%ids] : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
    %cs = folio.onnx_node "CumSum"(%mask, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
    %kept = folio.onnx_node "Mul"(%cs, %mask) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
    %all = folio.onnx_node "Sub"(%kept, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
    %kshape = folio.onnx_node "Shape"(%pk) {opset = 17 : i64} : (tensor<?x1x?x8xf32>) -> tensor<4xi64>
    %past = folio.onnx_node "Gather"(%kshape, %two) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
    %start = folio.onnx_node "Unsqueeze"(%past, %axes0) {opset = 17 : i64} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %new = folio.onnx_node "Slice"(%all, %start, %max, %axis1) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
    %pids = folio.onnx_node "Add"(%new, %two) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
    %pe = folio.embedding %ptable[%pids] : (tensor<34x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
    %x = folio.onnx_node "Add"(%h, %pe) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    %x4 = folio.onnx_node "Reshape"(%x, %split) {opset = 17 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<?x?x1x8xf32>
    %xt = folio.onnx_node "Transpose"(%x4) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x1x8xf32>) -> tensor<?x1x?x8xf32>
    %kc = folio.onnx_node "Concat"(%pk, %xt) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
    %vc = folio.onnx_node "Concat"(%pv, %xt) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x8xf32>
    %o = folio.attention %xt, %kc, %vc, %mask {scale = 0.5 : f64} : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>, tensor<?x?xi64>) -> tensor<?x1x?x8xf32>
    %ot = folio.onnx_node "Transpose"(%o) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x1x?x8xf32>) -> tensor<?x?x1x8xf32>
    %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 17 : i64} : (tensor<?x?x1x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
    %logits = folio.linear %o3, %head : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
    return %logits, %kc, %vc : tensor<?x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>
  }
}

// -----

// Tests a graph without cache whose position embedding reads
// Range(0, seq) (GPT-2): over the flattened batch that would number every
// token of every sequence together; it is proven to be each token's
// position in its own sequence and replaced by `positions`.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {{.*}}"tokens"
// CHECK-SAME: %[[POS:[^:]*]]: tensor<?xi32> {{.*}}"positions"
// CHECK-SAME: attributes {folio.max_context = 2048 : i64}
// CHECK-NOT: "Range"
// CHECK: %[[P64:.*]] = arith.extsi %[[POS]] :
// CHECK: %[[P2:.*]] = tensor.expand_shape %[[P64]] {{\[}}
// CHECK: folio.embedding %{{.*}}[%[[P2]]]
module {
  func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"})
      -> (tensor<?x?x16xf32> {folio.onnx_name = "logits"}) {
    %table = arith.constant dense<0.5> : tensor<16x8xf32>
    %ptable = arith.constant dense<0.25> : tensor<32x8xf32>
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
    %pids = folio.onnx_node "Unsqueeze"(%range, %axes0) {opset = 17 : i64} : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
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
}

// -----

// Tests a graph that reads its batch size and KV heads off the past inputs'
// shapes (torch.export takes sym sizes from whichever input has them):
// Shape(past.value, 0:1) and Gather(Shape(past.key), [0, 1]) become the
// constants of the paged batch of one ([1] and [1, 2]); no Shape of a past
// input is left.

// CHECK-LABEL: func.func @forward(
// CHECK-NOT: "Shape"
// CHECK: arith.constant dense<1> : tensor<1xi64>
// CHECK-NOT: "Shape"
// CHECK: arith.constant dense<[1, 2]> : tensor<2xi64>
// CHECK-NOT: "Shape"
// CHECK: folio.paged_attention
// CHECK-NOT: "Shape"
module {
  func.func @main(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                  %pos: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "position_ids"},
                  %pk: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"},
                  %pv: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.value"})
      -> (tensor<?x?x64xf32> {folio.onnx_name = "logits"}, tensor<?x2x?x8xf32> {folio.onnx_name = "present.0.key"}, tensor<?x2x?x8xf32> {folio.onnx_name = "present.0.value"}) {
    %table = arith.constant dense<0.5> : tensor<64x32xf32>
    %wq = arith.constant dense<0.1> : tensor<32x32xf32>
    %wk = arith.constant dense<0.2> : tensor<32x16xf32>
    %head = arith.constant dense<0.4> : tensor<32x64xf32>
    %batch = folio.onnx_node "Shape"(%pv) {opset = 18 : i64, onnx_attributes = {start = 0 : i64, end = 1 : i64}} : (tensor<?x2x?x8xf32>) -> tensor<1xi64>
    %kshape = folio.onnx_node "Shape"(%pk) {opset = 18 : i64} : (tensor<?x2x?x8xf32>) -> tensor<4xi64>
    %first2 = arith.constant dense<[0, 1]> : tensor<2xi64>
    %bh = folio.onnx_node "Gather"(%kshape, %first2) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<2xi64>) -> tensor<2xi64>
    %qtail = arith.constant dense<[-1, 4, 8]> : tensor<3xi64>
    %kvtail = arith.constant dense<[-1, 8]> : tensor<2xi64>
    %split_q = folio.onnx_node "Concat"(%batch, %qtail) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<3xi64>) -> tensor<4xi64>
    %split_kv = folio.onnx_node "Concat"(%bh, %kvtail) {opset = 18 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
    %h = folio.embedding %table[%ids] : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
    %q2 = folio.linear %h, %wq : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
    %k2 = folio.linear %h, %wk : (tensor<?x?x32xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
    %q4 = folio.onnx_node "Reshape"(%q2, %split_q) {opset = 18 : i64} : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
    %qt = folio.onnx_node "Transpose"(%q4) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x?x4x8xf32>) -> tensor<?x4x?x8xf32>
    %k4 = folio.onnx_node "Reshape"(%k2, %split_kv) {opset = 18 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x8xf32>
    %qr = folio.rotary %qt, %pos {rotary_dim = 8 : i64} : (tensor<?x4x?x8xf32>, tensor<?x?xi64>) -> tensor<?x4x?x8xf32>
    %kr = folio.rotary %k4, %pos {rotary_dim = 8 : i64} : (tensor<?x2x?x8xf32>, tensor<?x?xi64>) -> tensor<?x2x?x8xf32>
    %kc = folio.onnx_node "Concat"(%pk, %kr) {opset = 18 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
    %vc = folio.onnx_node "Concat"(%pv, %k4) {opset = 18 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
    %o4 = folio.attention %qr, %kc, %vc {scale = 0.35355 : f64} : (tensor<?x4x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x4x?x8xf32>
    %ot = folio.onnx_node "Transpose"(%o4) {opset = 18 : i64, onnx_attributes = {perm = array<i64: 0, 2, 1, 3>}} : (tensor<?x4x?x8xf32>) -> tensor<?x?x4x8xf32>
    %merge = arith.constant dense<[0, 0, 32]> : tensor<3xi64>
    %o3 = folio.onnx_node "Reshape"(%ot, %merge) {opset = 18 : i64} : (tensor<?x?x4x8xf32>, tensor<3xi64>) -> tensor<?x?x32xf32>
    %logits = folio.linear %o3, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
    return %logits, %kc, %vc : tensor<?x?x64xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
  }
}
