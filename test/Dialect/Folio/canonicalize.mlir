// RUN: folio-opt %s --split-input-file --canonicalize | FileCheck %s

// Tests that a reshape of a reshape becomes one reshape of the source.
// CHECK-LABEL: func @compose_reshapes
// CHECK-NEXT: %[[R:.*]] = folio.reshape %arg0 : tensor<1x?x32xf32> to tensor<?x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @compose_reshapes(%x: tensor<1x?x32xf32>) -> tensor<?x32xf32> {
  %a = folio.reshape %x : tensor<1x?x32xf32> to tensor<1x?x4x8xf32>
  %b = folio.reshape %a : tensor<1x?x4x8xf32> to tensor<?x32xf32>
  return %b : tensor<?x32xf32>
}

// -----

// Tests that reshapes, casts and transposes that change nothing fold away.
// CHECK-LABEL: func @identities
// CHECK-NEXT: return %arg0, %arg1, %arg0
func.func @identities(%x: tensor<1x?x32xf32>, %i: tensor<?xi64>)
    -> (tensor<1x?x32xf32>, tensor<?xi64>, tensor<1x?x32xf32>) {
  %a = folio.reshape %x : tensor<1x?x32xf32> to tensor<1x?x32xf32>
  %b = folio.cast %i : tensor<?xi64> to tensor<?xi64>
  %c = folio.transpose %x [0, 1, 2] : (tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %a, %b, %c : tensor<1x?x32xf32>, tensor<?xi64>, tensor<1x?x32xf32>
}

// -----

// Tests that a real permutation and a widening cast stay.
// CHECK-LABEL: func @kept
// CHECK: folio.transpose
// CHECK: folio.cast
func.func @kept(%x: tensor<2x3xf32>, %i: tensor<?xi32>) -> (tensor<3x2xf32>, tensor<?xi64>) {
  %a = folio.transpose %x [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = folio.cast %i : tensor<?xi32> to tensor<?xi64>
  return %a, %b : tensor<3x2xf32>, tensor<?xi64>
}
