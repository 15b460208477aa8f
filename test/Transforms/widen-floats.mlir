// RUN: folio-opt %s --split-input-file --folio-widen-floats | FileCheck %s

// Tests that an f16 graph computes in f32: arguments, results and node
// results are retyped, constants keep their values (inline and resource
// blobs: 1.0, the smallest and largest subnormals, +inf, -0, -inf, 65504
// and a NaN),
// Cast to f16 becomes Cast to f32, ConstantOfShape's value widens, integer
// values stay, and the module records the source type.

// CHECK: module attributes {folio.source_float = "f16"}
// CHECK-LABEL: func.func @f16_graph
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[IDS:.*]]: tensor<?xi64>) -> (tensor<?x4xf32>, tensor<?xf32>)
// CHECK: %[[SMALL:.*]] = arith.constant dense<[1.000000e+00, -2.000000e+00, 5.000000e-01, 6.550400e+04]> : tensor<4xf32>
// CHECK: %[[W:.*]] = arith.constant dense_resource<[[BLOB:.*]]> : tensor<80xf32>
// CHECK: folio.onnx_node "Add"(%[[X]], %[[SMALL]]) {opset = 21 : i64} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
// CHECK: folio.onnx_node "Cast"(%{{.*}}) {onnx_attributes = {to = 1 : i64}, opset = 21 : i64} : (tensor<?xi64>) -> tensor<?xf32>
// CHECK: folio.onnx_node "ConstantOfShape"(%{{.*}}) {onnx_attributes = {value = dense<-6.550400e+04> : tensor<1xf32>}, opset = 21 : i64} : (tensor<1xi64>) -> tensor<?xf32>
// CHECK: folio.onnx_node "Cast"(%{{.*}}) {onnx_attributes = {to = 7 : i64}, opset = 21 : i64} : (tensor<?xf32>) -> tensor<?xi64>
// CHECK: [[BLOB]]: "0x400000000000803F0000803300C07F380000807F00000080000080FF00E07F470000C07F
module {
  func.func @f16_graph(%x: tensor<?x4xf16>, %ids: tensor<?xi64>) -> (tensor<?x4xf16>, tensor<?xf16>) {
    %small = arith.constant dense<[1.0, -2.0, 0.5, 65504.0]> : tensor<4xf16>
    %w = arith.constant dense_resource<weights> : tensor<80xf16>
    %y = folio.onnx_node "Add"(%x, %small) {opset = 21 : i64} : (tensor<?x4xf16>, tensor<4xf16>) -> tensor<?x4xf16>
    %c = folio.onnx_node "Cast"(%ids) {opset = 21 : i64, onnx_attributes = {to = 10 : i64}} : (tensor<?xi64>) -> tensor<?xf16>
    %n = arith.constant dense<3> : tensor<1xi64>
    %fill = folio.onnx_node "ConstantOfShape"(%n) {opset = 21 : i64, onnx_attributes = {value = dense<-65504.0> : tensor<1xf16>}} : (tensor<1xi64>) -> tensor<?xf16>
    %back = folio.onnx_node "Cast"(%fill) {opset = 21 : i64, onnx_attributes = {to = 7 : i64}} : (tensor<?xf16>) -> tensor<?xi64>
    %s = folio.onnx_node "Add"(%c, %fill) {opset = 21 : i64} : (tensor<?xf16>, tensor<?xf16>) -> tensor<?xf16>
    %r = folio.onnx_node "Gather"(%w, %back) {opset = 21 : i64, onnx_attributes = {axis = 0 : i64}} : (tensor<80xf16>, tensor<?xi64>) -> tensor<?xf16>
    %t = folio.onnx_node "Add"(%s, %r) {opset = 21 : i64} : (tensor<?xf16>, tensor<?xf16>) -> tensor<?xf16>
    return %y, %t : tensor<?x4xf16>, tensor<?xf16>
  }
}

{-#
  dialect_resources: {
    builtin: {
      weights: "0x02000000003C0100FF03007C008000FCFF7B007E000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    }
  }
#-}

// -----

// Tests that a bf16 graph widens the same way and records "bf16"
// (0x3F80 is 1.0).

// CHECK: module attributes {folio.source_float = "bf16"}
// CHECK-LABEL: func.func @bf16_graph
// CHECK-SAME: (%{{.*}}: tensor<2xf32>) -> tensor<2xf32>
// CHECK: arith.constant dense<[1.000000e+00, 3.000000e+00]> : tensor<2xf32>
module {
  func.func @bf16_graph(%x: tensor<2xbf16>) -> tensor<2xbf16> {
    %c = arith.constant dense<[1.0, 3.0]> : tensor<2xbf16>
    %y = folio.onnx_node "Mul"(%x, %c) {opset = 21 : i64} : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
    return %y : tensor<2xbf16>
  }
}

// -----

// Tests that an f32 graph is left as it is: no attribute, no change.

// CHECK: module {
// CHECK-LABEL: func.func @f32_graph
// CHECK: folio.onnx_node "Cast"(%{{.*}}) {onnx_attributes = {to = 1 : i64}
module {
  func.func @f32_graph(%x: tensor<2xi64>) -> tensor<2xf32> {
    %y = folio.onnx_node "Cast"(%x) {opset = 21 : i64, onnx_attributes = {to = 1 : i64}} : (tensor<2xi64>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
}
