// RUN: folio-opt %s --split-input-file --folio-fold-embedding-offsets | FileCheck %s

// Tests that a position table read at positions + 2 (OPT's learned
// position embedding) becomes rows [2, 6) of the table read at the
// positions: the add goes, the widened positions index the new table, and
// its rows are the old table's from row 2 on.

// CHECK-LABEL: func @offset
// CHECK-SAME: (%[[P:[^:]*]]: tensor<?xi32> {folio.onnx_name = "positions"}
// CHECK-NOT: folio.binary
// CHECK-NOT: dense<2>
// CHECK-DAG: %[[T:.*]] = arith.constant dense_resource<folio_table_rows_0> : tensor<4x2xf32>
// CHECK-DAG: %[[W:.*]] = folio.cast %[[P]] : tensor<?xi32> to tensor<?xi64>
// CHECK-DAG: %[[R:.*]] = folio.reshape %[[W]] : tensor<?xi64> to tensor<1x?xi64>
// CHECK: folio.embedding %[[T]][%[[R]]] : (tensor<4x2xf32>, tensor<1x?xi64>) -> tensor<1x?x2xf32>
// The blob: its alignment (64), then 4.0, 5.0, ..., 11.0.
// CHECK: folio_table_rows_0: "0x40000000000080400000A0400000C0400000E04000000041000010410000204100003041"
func.func @offset(%pos: tensor<?xi32> {folio.onnx_name = "positions"}) -> tensor<1x?x2xf32> {
  %table = arith.constant dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0]]> : tensor<6x2xf32>
  %two = arith.constant dense<2> : tensor<i64>
  %wide = folio.cast %pos : tensor<?xi32> to tensor<?xi64>
  %rows = folio.reshape %wide : tensor<?xi64> to tensor<1x?xi64>
  %shifted = folio.binary add %two, %rows : (tensor<i64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %e = folio.embedding %table[%shifted] : (tensor<6x2xf32>, tensor<1x?xi64>) -> tensor<1x?x2xf32>
  return %e : tensor<1x?x2xf32>
}

// -----

// Tests what stays: ids that are not the positions (token ids could be
// anything), a narrowing cast of the positions, an offset as large as the
// table, and a table that is not a constant.

// CHECK-LABEL: func @keep
// CHECK-COUNT-4: folio.binary add
func.func @keep(%pos: tensor<?xi64> {folio.onnx_name = "positions"}, %tok: tensor<?xi64> {folio.onnx_name = "tokens"}, %t: tensor<6x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  %table = arith.constant dense<1.0> : tensor<6x2xf32>
  %two = arith.constant dense<2> : tensor<i64>
  %six = arith.constant dense<6> : tensor<i64>
  %a = folio.binary add %tok, %two : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %ea = folio.embedding %table[%a] : (tensor<6x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %narrow = folio.cast %pos : tensor<?xi64> to tensor<?xi32>
  %two32 = arith.constant dense<2> : tensor<i32>
  %b = folio.binary add %narrow, %two32 : (tensor<?xi32>, tensor<i32>) -> tensor<?xi32>
  %eb = folio.embedding %table[%b] : (tensor<6x2xf32>, tensor<?xi32>) -> tensor<?x2xf32>
  %c = folio.binary add %pos, %six : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %ec = folio.embedding %table[%c] : (tensor<6x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  %d = folio.binary add %pos, %two : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %ed = folio.embedding %t[%d] : (tensor<6x2xf32>, tensor<?xi64>) -> tensor<?x2xf32>
  return %ea, %eb, %ec, %ed : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}
