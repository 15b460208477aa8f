// RUN: folio-opt %s --folio-quantize-kv="residual=64 group-size=8" | FileCheck %s
// RUN: folio-opt %s --folio-quantize-kv="skip-layers=0 residual=32" | FileCheck %s --check-prefix=SKIP

// Tests that explicit int2 (KIVI) options are taken as given: a residual
// window of whole blocks and any value group that divides head_dim; a
// skipped layer stays at bf16.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = i2, scale = kivi, residual = 64, group = 8> {folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = i2, scale = kivi, residual = 64, group = 8> {folio.onnx_name = "kv_cache.1"}
// CHECK: folio.kv_write {{.*}}dtype = i2, scale = kivi, residual = 64, group = 8>

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = bf16> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = i2, scale = kivi, residual = 32, group = 32> {folio.onnx_name = "kv_cache.1"}
module attributes {folio.kv_cache_dtype = "int2"} {
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x2x64xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = f32> {folio.onnx_name = "kv_cache.1"}) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    folio.kv_write %c1, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 32, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    return
  }
}
