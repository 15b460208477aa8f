// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-widen-floats

// Tests that a graph mixing f16 and bf16 values is refused where the second
// type appears.

module {
  func.func @mixed(%x: tensor<2xf16>) -> tensor<2xf16> {
    %y = folio.onnx_node "Cast"(%x) {opset = 21 : i64, onnx_attributes = {to = 16 : i64}} : (tensor<2xf16>) -> tensor<2xbf16>
    // expected-error @+1 {{the graph mixes f16 and bf16 values; Folio computes a 16-bit graph in f32 from one of them}}
    %z = folio.onnx_node "Cast"(%y) {opset = 21 : i64, onnx_attributes = {to = 10 : i64}} : (tensor<2xbf16>) -> tensor<2xf16>
    return %z : tensor<2xf16>
  }
}

// -----

// Tests that a constant whose data cannot be read (a resource blob that is
// not there) is refused rather than widened to garbage.

module {
  func.func @missing_blob() -> tensor<100xf16> {
    // expected-error @+1 {{a 'tensor<100xf16>' constant holds no readable data to widen}}
    %w = arith.constant dense_resource<absent> : tensor<100xf16>
    return %w : tensor<100xf16>
  }
}
