// RUN: folio-opt %s --split-input-file --folio-speculative | FileCheck %s
// RUN: folio-opt %s --split-input-file --folio-speculative --folio-speculative | FileCheck %s
// RUN: folio-opt %s --split-input-file --folio-speculative --folio-fuse | FileCheck %s --check-prefix=FUSE

// Tests that the three verify entries follow forward, with dynamic sequence
// and draft counts, forward's vocabulary, named arguments and one
// spec_verify each; a second run adds nothing (the second RUN line checks
// the same output).

// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @verify_greedy(
// CHECK-SAME: %[[L:[^:]*]]: tensor<?x?x256xf32> {folio.onnx_name = "target_logits"}
// CHECK-SAME: %[[D:[^:]*]]: tensor<?x?xi32> {folio.onnx_name = "draft_tokens"})
// CHECK-SAME: -> (tensor<?xi32>, tensor<?x?xi32>)
// CHECK-NEXT: %[[N:.*]], %[[T:.*]] = folio.spec_verify <greedy> %[[L]], %[[D]] : tensor<?x?x256xf32>, tensor<?x?xi32> -> tensor<?xi32>, tensor<?x?xi32>
// CHECK-NEXT: return %[[N]], %[[T]] : tensor<?xi32>, tensor<?x?xi32>
// CHECK-LABEL: func.func @verify_sample(
// CHECK-SAME: %[[L:[^:]*]]: tensor<?x?x256xf32> {folio.onnx_name = "target_logits"}
// CHECK-SAME: %[[D:[^:]*]]: tensor<?x?xi32> {folio.onnx_name = "draft_tokens"}
// CHECK-SAME: %[[P:[^:]*]]: tensor<?x?x256xf32> {folio.onnx_name = "draft_probs"}
// CHECK-SAME: %[[U:[^:]*]]: tensor<?x?xf32> {folio.onnx_name = "uniforms"})
// CHECK-SAME: -> (tensor<?xi32>, tensor<?x?xi32>)
// CHECK-NEXT: folio.spec_verify <sample> %[[L]], %[[D]] draft_probs(%[[P]] : tensor<?x?x256xf32>) uniforms(%[[U]] : tensor<?x?xf32>) :
// CHECK-NEXT: return
// CHECK-LABEL: func.func @verify_sample_onehot(
// CHECK-SAME: %[[L:[^:]*]]: tensor<?x?x256xf32> {folio.onnx_name = "target_logits"}
// CHECK-SAME: %[[D:[^:]*]]: tensor<?x?xi32> {folio.onnx_name = "draft_tokens"}
// CHECK-SAME: %[[U:[^:]*]]: tensor<?x?xf32> {folio.onnx_name = "uniforms"})
// CHECK-NEXT: folio.spec_verify <sample> %[[L]], %[[D]] uniforms(%[[U]] : tensor<?x?xf32>) :
// CHECK-NEXT: return
// CHECK-NOT: func.func

// FUSE-LABEL: func.func @verify_greedy(
// FUSE: folio.kernel "spec_verify"(
// FUSE-NEXT: ^bb0
// FUSE-NEXT: folio.spec_verify <greedy>
// FUSE-NEXT: folio.yield
// FUSE-LABEL: func.func @verify_sample(
// FUSE: folio.kernel "spec_verify"(
// FUSE-LABEL: func.func @verify_sample_onehot(
// FUSE: folio.kernel "spec_verify"(
module {
  func.func @forward(%h: tensor<?x256xf32>) -> tensor<?x256xf32> {
    return %h : tensor<?x256xf32>
  }
}

// -----

// Tests that a module without forward gets no entries: there is no
// vocabulary to verify against.

// CHECK-LABEL: func.func @not_forward(
// CHECK-NOT: func.func @verify
module {
  func.func @not_forward(%h: tensor<?x256xf32>) -> tensor<?x256xf32> {
    return %h : tensor<?x256xf32>
  }
}

// -----

// Tests that an entry already there with its signature (types and argument
// names) is kept and the
// missing ones are added, after it.

// CHECK-LABEL: func.func @verify_sample_onehot(
// CHECK-SAME: attributes {folio.kept}
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @verify_greedy(
// CHECK-LABEL: func.func @verify_sample(
// CHECK-NOT: func.func
module {
  func.func @verify_sample_onehot(%l: tensor<?x?x64xf32> {folio.onnx_name = "target_logits"},
                                  %d: tensor<?x?xi32> {folio.onnx_name = "draft_tokens"},
                                  %u: tensor<?x?xf32> {folio.onnx_name = "uniforms"}) -> (tensor<?xi32>, tensor<?x?xi32>) attributes {folio.kept} {
    %n, %t = folio.spec_verify <sample> %l, %d uniforms(%u : tensor<?x?xf32>) : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<?xi32>, tensor<?x?xi32>
    return %n, %t : tensor<?xi32>, tensor<?x?xi32>
  }
  func.func @forward(%h: tensor<?x64xf32>) -> tensor<?x64xf32> {
    return %h : tensor<?x64xf32>
  }
}
