// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-speculative

// Tests that the vocabulary of the verify entries must be known: forward's
// logits need a static last dim.

// expected-error @+1 {{folio-speculative: forward must return one logits tensor [rows, vocab] with a static vocab (the verify entries take it), got ('tensor<?x?xf32>')}}
func.func @forward(%h: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %h : tensor<?x?xf32>
}

// -----

// Tests that forward must return one logits matrix.

// expected-error @+1 {{folio-speculative: forward must return one logits tensor [rows, vocab] with a static vocab (the verify entries take it), got ('tensor<?x8xf32>', 'tensor<?x8xf32>')}}
func.func @forward(%h: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  return %h, %h : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Tests that a symbol with an entry's name but another signature is not
// taken for the entry, nor replaced.

func.func @forward(%h: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %h : tensor<?x8xf32>
}
// expected-error @+1 {{folio-speculative: the symbol 'verify_sample' is taken by something other than the verify entry (a function of type '(tensor<?x?x8xf32>, tensor<?x?xi32>, tensor<?x?x8xf32>, tensor<?x?xf32>) -> (tensor<?xi32>, tensor<?x?xi32>)' whose arguments are named target_logits, draft_tokens, draft_probs, uniforms); rename it}}
func.func @verify_sample(%h: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %h : tensor<?x8xf32>
}

// -----

// Tests that an entry's arguments must carry their names: the plan binds
// them by name.

func.func @forward(%h: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %h : tensor<?x8xf32>
}
// expected-error @+1 {{folio-speculative: the symbol 'verify_greedy' is taken by something other than the verify entry (a function of type '(tensor<?x?x8xf32>, tensor<?x?xi32>) -> (tensor<?xi32>, tensor<?x?xi32>)' whose arguments are named target_logits, draft_tokens); rename it}}
func.func @verify_greedy(%l: tensor<?x?x8xf32> {folio.onnx_name = "target_logits"}, %d: tensor<?x?xi32>) -> (tensor<?xi32>, tensor<?x?xi32>) {
  %n, %t = folio.spec_verify <greedy> %l, %d : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<?xi32>, tensor<?x?xi32>
  return %n, %t : tensor<?xi32>, tensor<?x?xi32>
}
