// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-verify-serving-contract

// Tests that modules outside the serving contract are reported.

// expected-error @+1 {{no 'forward' entry: the module has not been through folio-page-kv}}
module {
  func.func @main() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{forward needs the 7 serving arguments and at least one KV cache, got 1 arguments}}
  func.func @forward(%t: tensor<?xi32>) -> tensor<?x8xf32> {
    %c = arith.constant dense<0.0> : tensor<1x8xf32>
    %d = tensor.cast %c : tensor<1x8xf32> to tensor<?x8xf32>
    return %d : tensor<?x8xf32>
  }
}

// -----

module {
  // expected-error @+1 {{argument 1 must be 'positions' of type 'tensor<?xi32>', got positions of type 'tensor<?xi64>'}}
  func.func @forward(%t: tensor<?xi32> {folio.onnx_name = "tokens"}, %p: tensor<?xi64> {folio.onnx_name = "positions"},
                     %q: tensor<?xi32> {folio.onnx_name = "query_start_loc"}, %l: tensor<?xi32> {folio.onnx_name = "seq_lens"},
                     %b: tensor<?x?xi32> {folio.onnx_name = "block_tables"}, %s: tensor<?xi64> {folio.onnx_name = "slot_mapping"},
                     %r: tensor<?xi32> {folio.onnx_name = "logits_indices"},
                     %c: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>) -> tensor<?x8xf32> {
    %z = arith.constant dense<0.0> : tensor<1x8xf32>
    %d = tensor.cast %z : tensor<1x8xf32> to tensor<?x8xf32>
    return %d : tensor<?x8xf32>
  }
}

// -----

module {
  // expected-error @+1 {{KV cache argument 7 has 0 kv_write and 0 paged_attention users; each layer needs exactly one write and at least one read}}
  func.func @forward(%t: tensor<?xi32> {folio.onnx_name = "tokens"}, %p: tensor<?xi32> {folio.onnx_name = "positions"},
                     %q: tensor<?xi32> {folio.onnx_name = "query_start_loc"}, %l: tensor<?xi32> {folio.onnx_name = "seq_lens"},
                     %b: tensor<?x?xi32> {folio.onnx_name = "block_tables"}, %s: tensor<?xi64> {folio.onnx_name = "slot_mapping"},
                     %r: tensor<?xi32> {folio.onnx_name = "logits_indices"},
                     %c: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>) -> tensor<?x8xf32> {
    %z = arith.constant dense<0.0> : tensor<1x8xf32>
    %d = tensor.cast %z : tensor<1x8xf32> to tensor<?x8xf32>
    return %d : tensor<?x8xf32>
  }
}

// -----

module {
  func.func @forward(%t: tensor<?xi32> {folio.onnx_name = "tokens"}, %p: tensor<?xi32> {folio.onnx_name = "positions"},
                     %q: tensor<?xi32> {folio.onnx_name = "query_start_loc"}, %l: tensor<?xi32> {folio.onnx_name = "seq_lens"},
                     %b: tensor<?x?xi32> {folio.onnx_name = "block_tables"}, %s: tensor<?xi64> {folio.onnx_name = "slot_mapping"},
                     %r: tensor<?xi32> {folio.onnx_name = "logits_indices"},
                     %c: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, %x: tensor<?x1x8xf32>) -> tensor<?x1x8xf32> {
    // expected-error @+1 {{reads the KV cache before this step's rows are written}}
    %o = folio.paged_attention %x, %c, %b, %l, %q {scale = 0.5 : f64} : (tensor<?x1x8xf32>, !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x1x8xf32>
    folio.kv_write %c, %x, %x, %s : !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?xi64>
    return %o : tensor<?x1x8xf32>
  }
}
