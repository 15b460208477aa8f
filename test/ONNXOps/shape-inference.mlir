// RUN: folio-opt %s --split-input-file --folio-test-onnx-shapes | FileCheck %s

// Tests that the shape subgraphs exporters write (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape) resolve to dims in terms of the inputs'
// named symbols.

// CHECK-LABEL: func @reshape_heads
func.func @reshape_heads(%x: tensor<?x?x32xf32> {folio.dim_names = ["batch", "seq", ""]}) -> tensor<?x?x?x?xf32> {
  // CHECK: "Shape"{{.*}}folio.test.dims = ["[3]"], folio.test.values = ["[batch, seq, 32]"]
  %shape = folio.onnx_node "Shape"(%x) {opset = 17 : i64} : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %c0 = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %c1 = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  // CHECK: "Gather"{{.*}}folio.test.dims = ["[]"], folio.test.values = ["[batch]"]
  %b = folio.onnx_node "Gather"(%shape, %c0) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %s = folio.onnx_node "Gather"(%shape, %c1) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %axes = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<0> : tensor<1xi64>}} : () -> tensor<1xi64>
  // CHECK: "Unsqueeze"{{.*}}folio.test.dims = ["[1]"], folio.test.values = ["[batch]"]
  %b1 = folio.onnx_node "Unsqueeze"(%b, %axes) {opset = 17 : i64} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = folio.onnx_node "Unsqueeze"(%s, %axes) {opset = 17 : i64} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %heads = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[4, 8]> : tensor<2xi64>}} : () -> tensor<2xi64>
  // CHECK: "Concat"{{.*}}folio.test.dims = ["[4]"], folio.test.values = ["[batch, seq, 4, 8]"]
  %target = folio.onnx_node "Concat"(%b1, %s1, %heads) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  // CHECK: "Reshape"{{.*}}folio.test.dims = ["[batch, seq, 4, 8]"]
  %r = folio.onnx_node "Reshape"(%x, %target) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// Tests that Reshape's 0 copies a dim and -1 cancels symbolic factors.

// CHECK-LABEL: func @reshape_infer
func.func @reshape_infer(%x: tensor<?x?x32xf32> {folio.dim_names = ["batch", "seq", ""]}) -> (tensor<?x?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %t = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[0, 0, -1, 8]> : tensor<4xi64>}} : () -> tensor<4xi64>
  // CHECK: "Reshape"{{.*}}folio.test.dims = ["[batch, seq, 4, 8]"]
  %r = folio.onnx_node "Reshape"(%x, %t) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %flat = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[-1, 32]> : tensor<2xi64>}} : () -> tensor<2xi64>
  // CHECK: "Reshape"{{.*}}folio.test.dims = ["[batch * seq, 32]"]
  %f = folio.onnx_node "Reshape"(%x, %flat) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %rows = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[0, -1]> : tensor<2xi64>}} : () -> tensor<2xi64>
  // CHECK: "Reshape"{{.*}}folio.test.dims = ["[batch, seq * 32]"]
  %g = folio.onnx_node "Reshape"(%x, %rows) {opset = 17 : i64} : (tensor<?x?x32xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %r, %f, %g : tensor<?x?x?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Tests positions computed the way exporters write them: past + Range(seq),
// and the KV concat growing past by seq.

// CHECK-LABEL: func @positions_and_kv
func.func @positions_and_kv(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"]},
                            %past: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "past", ""]},
                            %k: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "seq", ""]}) -> (tensor<?xi64>, tensor<?x2x?x8xf32>) {
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %pshape = folio.onnx_node "Shape"(%past) {opset = 17 : i64} : (tensor<?x2x?x8xf32>) -> tensor<4xi64>
  %i1 = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  %i2 = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<2> : tensor<i64>}} : () -> tensor<i64>
  %zero = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<0> : tensor<i64>}} : () -> tensor<i64>
  %seq = folio.onnx_node "Gather"(%shape, %i1) {opset = 17 : i64} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %plen = folio.onnx_node "Gather"(%pshape, %i2) {opset = 17 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  // CHECK: "Add"{{.*}}folio.test.values = ["[seq + past]"]
  %total = folio.onnx_node "Add"(%plen, %seq) {opset = 17 : i64} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  // CHECK: "Range"{{.*}}folio.test.dims = ["[seq + past]"]
  %r = folio.onnx_node "Range"(%zero, %total, %i1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: "Range"{{.*}}folio.test.dims = ["[seq]"]
  %pos = folio.onnx_node "Range"(%plen, %total, %i1) {opset = 17 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  // CHECK: "Concat"{{.*}}folio.test.dims = ["[batch, 2, seq + past, 8]"]
  %kv = folio.onnx_node "Concat"(%past, %k) {opset = 17 : i64, onnx_attributes = {axis = -2 : i64}} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %pos, %kv : tensor<?xi64>, tensor<?x2x?x8xf32>
}

// -----

// Tests broadcasting, MatMul batch dims, Transpose, Slice to the end, Split,
// Squeeze and Where/Equal folding on tracked values.

// CHECK-LABEL: func @misc
func.func @misc(%q: tensor<?x4x?x8xf32> {folio.dim_names = ["batch", "", "seq", ""]},
                %k: tensor<?x4x?x8xf32> {folio.dim_names = ["batch", "", "kv", ""]},
                %m: tensor<?x1x1x?xf32> {folio.dim_names = ["batch", "", "", "kv"]}) -> (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>, tensor<?x4x?x2xf32>, tensor<3xi64>) {
  // CHECK: "Transpose"{{.*}}folio.test.dims = ["[batch, 4, 8, kv]"]
  %kt = folio.onnx_node "Transpose"(%k) {opset = 17 : i64, onnx_attributes = {perm = array<i64: 0, 1, 3, 2>}} : (tensor<?x4x?x8xf32>) -> tensor<?x4x8x?xf32>
  // CHECK: "MatMul"{{.*}}folio.test.dims = ["[batch, 4, seq, kv]"]
  %s = folio.onnx_node "MatMul"(%q, %kt) {opset = 17 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x8x?xf32>) -> tensor<?x4x?x?xf32>
  // CHECK: "Add"{{.*}}folio.test.dims = ["[batch, 4, seq, kv]"]
  %a = folio.onnx_node "Add"(%s, %m) {opset = 17 : i64} : (tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x?xf32>
  %st = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<4> : tensor<1xi64>}} : () -> tensor<1xi64>
  %en = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<9223372036854775807> : tensor<1xi64>}} : () -> tensor<1xi64>
  %ax = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<3> : tensor<1xi64>}} : () -> tensor<1xi64>
  // CHECK: "Slice"{{.*}}folio.test.dims = ["[batch, 4, seq, 4]"]
  %hi = folio.onnx_node "Slice"(%q, %st, %en, %ax) {opset = 17 : i64} : (tensor<?x4x?x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  // CHECK: "Split"{{.*}}folio.test.dims = ["[batch, 4, seq, 4]", "[batch, 4, seq, 2]", "[batch, 4, seq, 2]"]
  %p0, %p1, %p2 = folio.onnx_node "Split"(%q) {opset = 17 : i64, onnx_attributes = {axis = -1 : i64, split = array<i64: 4, 2, 2>}} : (tensor<?x4x?x8xf32>) -> (tensor<?x4x?x4xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>)
  %v = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<[2, -1, 8]> : tensor<3xi64>}} : () -> tensor<3xi64>
  %neg = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<-1> : tensor<i64>}} : () -> tensor<i64>
  %one = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  // CHECK: "Equal"{{.*}}folio.test.values = ["[0, 1, 0]"]
  %eq = folio.onnx_node "Equal"(%v, %neg) {opset = 17 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  // CHECK: "Where"{{.*}}folio.test.values = ["[2, 1, 8]"]
  %w = folio.onnx_node "Where"(%eq, %one, %v) {opset = 17 : i64} : (tensor<3xi1>, tensor<i64>, tensor<3xi64>) -> tensor<3xi64>
  return %a, %hi, %p0, %p2, %w : tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>, tensor<?x4x?x2xf32>, tensor<3xi64>
}

// -----

// Tests that the attention scale exporters compute from a shape folds to a
// constant: 1 / sqrt(head_dim).

// CHECK-LABEL: func @sdpa_scale
func.func @sdpa_scale(%q: tensor<?x4x?x16xf32> {folio.dim_names = ["batch", "", "seq", ""]}) -> tensor<f32> {
  %shape = folio.onnx_node "Shape"(%q) {opset = 17 : i64} : (tensor<?x4x?x16xf32>) -> tensor<4xi64>
  %st = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<-1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %en = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<9223372036854775807> : tensor<1xi64>}} : () -> tensor<1xi64>
  // CHECK: "Slice"{{.*}}folio.test.values = ["[16]"]
  %d = folio.onnx_node "Slice"(%shape, %st, %en) {opset = 17 : i64} : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  // CHECK: "Cast"{{.*}}folio.test.values = ["[16.000000]"]
  %f = folio.onnx_node "Cast"(%d) {opset = 17 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<1xi64>) -> tensor<1xf32>
  // CHECK: "Sqrt"{{.*}}folio.test.values = ["[4.000000]"]
  %r = folio.onnx_node "Sqrt"(%f) {opset = 17 : i64} : (tensor<1xf32>) -> tensor<1xf32>
  %one = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
  // CHECK: "Div"{{.*}}folio.test.values = ["[0.250000]"]
  %s = folio.onnx_node "Div"(%one, %r) {opset = 17 : i64} : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
  %c = folio.onnx_node "Squeeze"(%s) {opset = 17 : i64} : (tensor<1xf32>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

// Tests Slice with symbolic bounds counted from the end (x[:, -seq:]), as
// the no-position exports slice the positions they compute from the mask.

// CHECK-LABEL: func @slice_from_end
func.func @slice_from_end(%m: tensor<?x?xi64> {folio.dim_names = ["batch", "total"]},
                          %ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"]}) -> tensor<?x?xi64> {
  %shape = folio.onnx_node "Shape"(%ids) {opset = 17 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %one = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
  %seq = folio.onnx_node "Gather"(%shape, %one) {opset = 17 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %neg = folio.onnx_node "Neg"(%seq) {opset = 17 : i64} : (tensor<1xi64>) -> tensor<1xi64>
  %end = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<9223372036854775807> : tensor<1xi64>}} : () -> tensor<1xi64>
  // CHECK: "Slice"{{.*}}folio.test.dims = ["[batch, seq]"]
  %s = folio.onnx_node "Slice"(%m, %neg, %end, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  // CHECK: "Slice"{{.*}}folio.test.dims = ["[batch, total - seq - 1]"]
  %t = folio.onnx_node "Slice"(%m, %one, %neg, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  return %s : tensor<?x?xi64>
}

// -----

// Tests that a zero dim makes a tensor empty however large the others are,
// and that folding with an empty constant gives an empty result.
// CHECK-LABEL: func @empty_tensors
func.func @empty_tensors(%x: tensor<1xf32>) {
  %s = arith.constant dense<[4611686018427387904, 4611686018427387904, 0]> : tensor<3xi64>
  // CHECK: "Expand"{{.*}}folio.test.dims = ["[4611686018427387904, 4611686018427387904, 0]"]
  %e = folio.onnx_node "Expand"(%x, %s) {opset = 17 : i64} : (tensor<1xf32>, tensor<3xi64>) -> tensor<?x?x0xf32>
  %empty = arith.constant dense<> : tensor<0xi64>
  %one = arith.constant dense<7> : tensor<1xi64>
  // CHECK: "Add"{{.*}}folio.test.dims = ["[0]"], folio.test.values = ["[]"]
  %a = folio.onnx_node "Add"(%empty, %one) {opset = 17 : i64} : (tensor<0xi64>, tensor<1xi64>) -> tensor<0xi64>
  return
}

// -----

// Tests that Equal and the comparisons decide on dims alone when the sign
// of the difference holds for every size: batch is never -1, so the
// Where(Equal(shape, -1), 1, shape) exporters write for expand(-1) folds to
// the shape itself.

// CHECK-LABEL: func @compare_symbolic
func.func @compare_symbolic(%x: tensor<?x?xf32> {folio.dim_names = ["batch", "seq"]}) -> (tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi64>) {
  %shape = folio.onnx_node "Shape"(%x) {opset = 17 : i64} : (tensor<?x?xf32>) -> tensor<2xi64>
  %minus1 = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<-1> : tensor<2xi64>}} : () -> tensor<2xi64>
  %ones = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<2xi64>}} : () -> tensor<2xi64>
  // CHECK: "Equal"{{.*}}folio.test.values = ["[0, 0]"]
  %eq = folio.onnx_node "Equal"(%shape, %minus1) {opset = 17 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  // CHECK: "Greater"{{.*}}folio.test.values = ["[1, 1]"]
  %gt = folio.onnx_node "Greater"(%shape, %minus1) {opset = 17 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  // batch - 1 may be 0 or more: undecided.
  // CHECK: "Less"{{.*}}folio.test.values = ["[?, ?]"]
  %lt = folio.onnx_node "Less"(%ones, %shape) {opset = 17 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  // CHECK: "Where"{{.*}}folio.test.values = ["[batch, seq]"]
  %w = folio.onnx_node "Where"(%eq, %ones, %shape) {opset = 17 : i64} : (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %eq, %gt, %lt, %w : tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi64>
}

// -----

// Tests IsNaN (a bool per element) and ScatterND (data's shape), which SDPA
// exports and older masking code write.

// CHECK-LABEL: func @isnan_scatternd
func.func @isnan_scatternd(%p: tensor<?x4x?x?xf32> {folio.dim_names = ["batch", "", "seq", "total"]}, %i: tensor<?x?x1x1x4xi64>, %u: tensor<?x?x1x1xf32>) -> (tensor<?x4x?x?xi1>, tensor<?x4x?x?xf32>) {
  // CHECK: "IsNaN"{{.*}}folio.test.dims = ["[batch, 4, seq, total]"]
  %n = folio.onnx_node "IsNaN"(%p) {opset = 17 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xi1>
  // CHECK: "ScatterND"{{.*}}folio.test.dims = ["[batch, 4, seq, total]"]
  %s = folio.onnx_node "ScatterND"(%p, %i, %u) {opset = 17 : i64} : (tensor<?x4x?x?xf32>, tensor<?x?x1x1x4xi64>, tensor<?x?x1x1xf32>) -> tensor<?x4x?x?xf32>
  return %n, %s : tensor<?x4x?x?xi1>, tensor<?x4x?x?xf32>
}

// -----

// Tests GatherND (indices' leading dims, then data's dims after the
// batch_dims and the indexed ones), which torch.export writes for advanced
// indexing of the padding mask.

// CHECK-LABEL: func @gathernd
func.func @gathernd(%m: tensor<?x?xi1> {folio.dim_names = ["batch", "total"]}, %i: tensor<?x1x?x?x2xi64> {folio.dim_names = ["batch", "", "seq", "total", ""]}, %j: tensor<?x?x1xi64> {folio.dim_names = ["batch", "seq", ""]}, %x: tensor<?x4x8xf32> {folio.dim_names = ["batch", "", ""]}) -> (tensor<?x1x?x?xi1>, tensor<?x?x8xf32>) {
  // CHECK: "GatherND"{{.*}}folio.test.dims = ["[batch, 1, seq, total]"]
  %g = folio.onnx_node "GatherND"(%m, %i) {opset = 18 : i64} : (tensor<?x?xi1>, tensor<?x1x?x?x2xi64>) -> tensor<?x1x?x?xi1>
  // CHECK: "GatherND"{{.*}}folio.test.dims = ["[batch, seq, 8]"]
  %h = folio.onnx_node "GatherND"(%x, %j) {opset = 18 : i64, onnx_attributes = {batch_dims = 1 : i64}} : (tensor<?x4x8xf32>, tensor<?x?x1xi64>) -> tensor<?x?x8xf32>
  return %g, %h : tensor<?x1x?x?xi1>, tensor<?x?x8xf32>
}

// -----

// Tests the decoder contract's relation between inputs: attention_mask
// covers the past and the new tokens, so its length is past + seq, and
// slicing it past the past (OPT's positions, mask[:, past:]) leaves the new
// tokens' length, which broadcasts with the hidden states.

// CHECK-LABEL: func @mask_length
func.func @mask_length(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                       %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "total"], folio.onnx_name = "attention_mask"},
                       %pk: tensor<?x2x?x8xf32> {folio.dim_names = ["batch", "", "past", ""], folio.onnx_name = "past_key_values.0.key"}) -> tensor<?x?xi64> {
  %one = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<i64>}} : () -> tensor<i64>
  // CHECK: "CumSum"{{.*}}folio.test.dims = ["[batch, seq + past]"]
  %cs = folio.onnx_node "CumSum"(%mask, %one) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %shape = folio.onnx_node "Shape"(%pk) {opset = 17 : i64} : (tensor<?x2x?x8xf32>) -> tensor<4xi64>
  %two = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<2> : tensor<1xi64>}} : () -> tensor<1xi64>
  %past = folio.onnx_node "Gather"(%shape, %two) {opset = 17 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %end = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<9223372036854775807> : tensor<1xi64>}} : () -> tensor<1xi64>
  %axis = folio.onnx_node "Constant"() {opset = 17 : i64, onnx_attributes = {value = dense<1> : tensor<1xi64>}} : () -> tensor<1xi64>
  // CHECK: "Slice"{{.*}}folio.test.dims = ["[batch, seq]"]
  %new = folio.onnx_node "Slice"(%cs, %past, %end, %axis) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  // CHECK: "Add"{{.*}}folio.test.dims = ["[batch, seq]"]
  %sum = folio.onnx_node "Add"(%new, %ids) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  return %sum : tensor<?x?xi64>
}

// -----

// Tests that without past inputs the mask's length is the new tokens'.

// CHECK-LABEL: func @mask_length_no_cache
func.func @mask_length_no_cache(%ids: tensor<?x?xi64> {folio.dim_names = ["batch", "seq"], folio.onnx_name = "input_ids"},
                                %mask: tensor<?x?xi64> {folio.dim_names = ["batch", "total"], folio.onnx_name = "attention_mask"}) -> tensor<?x?xi64> {
  // CHECK: "Add"{{.*}}folio.test.dims = ["[batch, seq]"]
  %sum = folio.onnx_node "Add"(%mask, %ids) {opset = 17 : i64} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  return %sum : tensor<?x?xi64>
}

// -----

// Tests that GatherElements (GPT-J's sin/cos rows picked by position) has
// the indices' shape.

// CHECK-LABEL: func @gather_elements
func.func @gather_elements(%table: tensor<?x16x4xf32> {folio.dim_names = ["batch", "", ""]},
                           %idx: tensor<?x?x4xi64> {folio.dim_names = ["batch", "seq", ""]}) -> tensor<?x?x4xf32> {
  // CHECK: "GatherElements"{{.*}}folio.test.dims = ["[batch, seq, 4]"]
  %0 = folio.onnx_node "GatherElements"(%table, %idx) {opset = 17 : i64, onnx_attributes = {axis = 1 : i64}} : (tensor<?x16x4xf32>, tensor<?x?x4xi64>) -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
}

// -----

// Tests that a Reshape's -1 cancels a dim that is itself a product from an
// earlier -1 ([b, s, 64] -> [b, 4s, 16] -> [b, s, 64], ONNX Runtime GenAI's
// per-head norms), and that Concat takes a constant dim over a named one
// (ONNX requires them equal: the builder's past names its head dim).

// CHECK-LABEL: func @reshape_products_and_concat
func.func @reshape_products_and_concat(%x: tensor<?x?x64xf32> {folio.dim_names = ["batch", "seq", ""]},
                                       %past: tensor<?x2x?x?xf32> {folio.dim_names = ["batch", "", "past", "head_dim"]},
                                       %new: tensor<?x2x?x16xf32> {folio.dim_names = ["batch", "", "seq", ""]}) -> (tensor<?x?x64xf32>, tensor<?x2x?x16xf32>) {
  %split = arith.constant dense<[0, -1, 16]> : tensor<3xi64>
  %merge = arith.constant dense<[0, -1, 64]> : tensor<3xi64>
  // CHECK: "Reshape"{{.*}}folio.test.dims = ["[batch, seq * 4, 16]"]
  %heads = folio.onnx_node "Reshape"(%x, %split) {opset = 17 : i64} : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  // CHECK: "Reshape"{{.*}}folio.test.dims = ["[batch, seq, 64]"]
  %back = folio.onnx_node "Reshape"(%heads, %merge) {opset = 17 : i64} : (tensor<?x?x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  // CHECK: "Concat"{{.*}}folio.test.dims = ["[batch, 2, seq + past, 16]"]
  %cat = folio.onnx_node "Concat"(%past, %new) {opset = 17 : i64, onnx_attributes = {axis = 2 : i64}} : (tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  return %back, %cat : tensor<?x?x64xf32>, tensor<?x2x?x16xf32>
}

// -----

// Tests GroupQueryAttention with packed QKV ([b, s, (4 + 2 * 2) * 8]): the
// output has num_heads * 8 columns and the present the head size the query
// implies, whatever the past names its last dim.

// CHECK-LABEL: func @gqa_packed
func.func @gqa_packed(%qkv: tensor<?x?x64xf32> {folio.dim_names = ["batch", "seq", ""]},
                      %past: tensor<?x2x?x?xf32> {folio.dim_names = ["batch", "", "past", "head_dim"]},
                      %lens: tensor<?xi32> {folio.dim_names = ["batch"]},
                      %total: tensor<i32>) -> tensor<?x?x32xf32> {
  // CHECK: "GroupQueryAttention"{{.*}}folio.test.dims = ["[batch, seq, 32]", "[batch, 2, seq + past, 8]", "[batch, 2, seq + past, 8]"]
  %y:3 = folio.onnx_node "GroupQueryAttention"(%qkv, %past, %past, %lens, %total) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 1, 2>, onnx_attributes = {num_heads = 4 : i64, kv_num_heads = 2 : i64}} : (tensor<?x?x64xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?xi32>, tensor<i32>) -> (tensor<?x?x32xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>)
  return %y#0 : tensor<?x?x32xf32>
}

// -----

// Tests MultiHeadAttention (com.microsoft): rank-3 query and rank-3 or
// rank-4 key/value, split by num_heads; the output has num_heads times the
// value's head size, the present [batch, num_heads, past + kv_seq, head].

// CHECK-LABEL: func @mha
func.func @mha(%q: tensor<?x?x32xf32> {folio.dim_names = ["batch", "seq", ""]},
               %k4: tensor<?x4x?x8xf32> {folio.dim_names = ["batch", "", "kv", ""]},
               %v: tensor<?x?x64xf32> {folio.dim_names = ["batch", "kv", ""]},
               %bias: tensor<?x4x?x?xf32> {folio.dim_names = ["batch", "", "seq", "total"]},
               %past: tensor<?x4x?x8xf32> {folio.dim_names = ["batch", "", "past", ""]}) -> tensor<?x?x64xf32> {
  // CHECK: "MultiHeadAttention"{{.*}}folio.test.dims = ["[batch, seq, 64]"]
  %y = folio.onnx_node "MultiHeadAttention"(%q, %k4, %v) {domain = "com.microsoft", opset = 1 : i64, onnx_attributes = {num_heads = 4 : i64}} : (tensor<?x?x32xf32>, tensor<?x4x?x8xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: "MultiHeadAttention"{{.*}}folio.test.dims = ["[batch, seq, 32]", "[batch, 4, kv + past, 8]", "[batch, 4, kv + past, 8]"]
  %z:3 = folio.onnx_node "MultiHeadAttention"(%q, %k4, %k4, %bias, %past, %past) {domain = "com.microsoft", opset = 1 : i64, absent_inputs = array<i64: 3, 4>, onnx_attributes = {num_heads = 4 : i64, unidirectional = 1 : i64}} : (tensor<?x?x32xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x?xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>)
  return %y : tensor<?x?x64xf32>
}
