// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-quantize-kv | FileCheck %s
// RUN: folio-opt %s --split-input-file --verify-diagnostics --folio-quantize-kv="skip-layers=1 group-size=16" | FileCheck %s --check-prefix=SKIP

// Tests that int8 caches get i8 with per-token-head scales computed when
// written: the entry's argument types, its function type and every user
// change, and no scale operands appear. A skipped layer stays at bf16.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[C0:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i8, scale = per_token_head> {folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: %[[C1:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i8, scale = per_token_head> {folio.onnx_name = "kv_cache.1"}
// CHECK-NOT: arith.constant
// CHECK: folio.kv_write %[[C0]], %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} : !folio.kv_cache<{{.*}}dtype = i8, scale = per_token_head>
// CHECK: folio.paged_attention %{{[^ ]*}}, %[[C0]], %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} {scale
// CHECK: folio.kv_write %[[C1]]
// CHECK: folio.paged_attention %{{[^ ]*}}, %[[C1]]

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: dtype = i8, scale = per_token_head> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = bf16> {folio.onnx_name = "kv_cache.1"}
module attributes {folio.kv_cache_dtype = "int8"} {
  func.func @forward(%slots: tensor<?xi64>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                     %q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.1"})
      -> tensor<?x4x8xf32> {
    folio.kv_write %c0, %k, %v, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    %a = folio.paged_attention %q, %c0, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x4x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
    folio.kv_write %c1, %k, %v, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    %b = folio.paged_attention %a, %c1, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x4x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
    return %b : tensor<?x4x8xf32>
  }
}

// -----

// Tests that fp8 caches get per-head scales absmax / 448 from the module's
// calibration (K index 0, V index 1), an abs-max of 0 giving 1 / 448, as
// constants passed to the write and to every read; a skipped layer takes
// neither scales nor fp8.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[C0:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f8E4M3FN, scale = per_head>
// CHECK-SAME: %[[C1:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f8E4M3FN, scale = per_head>
// CHECK-DAG: %[[K0:.*]] = arith.constant dense<[1.000000e+00, 0.00223214296]> : tensor<2xf32>
// CHECK-DAG: %[[V0:.*]] = arith.constant dense<[2.000000e+00, 1.000000e-01]> : tensor<2xf32>
// CHECK-DAG: %[[K1:.*]] = arith.constant dense<[5.000000e-01, 2.500000e-01]> : tensor<2xf32>
// CHECK-DAG: %[[V1:.*]] = arith.constant dense<3.000000e+00> : tensor<2xf32>
// CHECK: folio.kv_write %[[C0]], %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} scales(%[[K0]], %[[V0]]) : {{.*}}, tensor<2xf32>, tensor<2xf32>
// CHECK: folio.paged_attention %{{[^ ]*}}, %[[C0]], {{.*}} scales(%[[K0]], %[[V0]])
// CHECK: folio.paged_attention %{{[^ ]*}}, %[[C0]], {{.*}} scales(%[[K0]], %[[V0]])
// CHECK: folio.kv_write %[[C1]], {{.*}} scales(%[[K1]], %[[V1]])
// CHECK: folio.paged_attention %{{[^ ]*}}, %[[C1]], {{.*}} scales(%[[K1]], %[[V1]])

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: dtype = f8E4M3FN, scale = per_head> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = bf16> {folio.onnx_name = "kv_cache.1"}
// SKIP-COUNT-2: arith.constant
// SKIP-NOT: arith.constant
// SKIP: folio.kv_write %arg7, {{.*}} scales(
// SKIP: folio.kv_write %arg8, %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} :
// SKIP: folio.paged_attention %{{[^ ]*}}, %arg8, %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} {scale
module attributes {folio.kv_cache_dtype = "fp8_e4m3",
                   folio.kv_calibration = dense<[[[448.0, 0.0], [896.0, 44.8]],
                                                 [[224.0, 112.0], [1344.0, 1344.0]]]> : tensor<2x2x2xf32>} {
  func.func @forward(%slots: tensor<?xi64>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                     %q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x8xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.1"})
      -> tensor<?x4x8xf32> {
    folio.kv_write %c0, %k, %v, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    %a = folio.paged_attention %q, %c0, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x4x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
    %a2 = folio.paged_attention %a, %c0, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x4x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
    folio.kv_write %c1, %k, %v, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    %b = folio.paged_attention %a2, %c1, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x4x8xf32>, !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
    return %b : tensor<?x4x8xf32>
  }
}

// -----

// Tests that without calibration data fp8 caches get the default scale 1.0
// and the pass warns, saying how to calibrate.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f8E5M2, scale = per_head>
// CHECK: %[[K:.*]] = arith.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK: %[[V:.*]] = arith.constant dense<1.000000e+00> : tensor<1xf32>
// CHECK: folio.kv_write {{.*}} scales(%[[K]], %[[V]])
// CHECK: folio.paged_attention {{.*}} scales(%[[K]], %[[V]])

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: dtype = f8E5M2, scale = per_head> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: dtype = bf16> {folio.onnx_name = "kv_cache.1"}

// expected-warning @+1 {{no KV-cache calibration data (folio.kv_calibration): the fp8_e5m2 caches use the default scale 1.0, which keeps |K| and |V| up to 57344 and clips beyond; calibrate with folioc --calibration-data FILE}}
module attributes {folio.kv_cache_dtype = "fp8_e5m2"} {
  func.func @forward(%slots: tensor<?xi64>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                     %q: tensor<?x2x8xf32>, %k: tensor<?x1x8xf32>,
                     %c0: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.1"})
      -> tensor<?x2x8xf32> {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?xi64>
    %a = folio.paged_attention %q, %c0, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x2x8xf32>, !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
    folio.kv_write %c1, %k, %k, %slots : !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?xi64>
    %b = folio.paged_attention %a, %c1, %bt, %lens, %qsl {scale = 0.35 : f64} : (tensor<?x2x8xf32>, !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
    return %b : tensor<?x2x8xf32>
  }
}

// -----

// Tests that int4 caches get per-token-group scales of group-size elements
// (32 by default).

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i4, scale = per_token_group, group = 32>
// CHECK: folio.kv_write {{.*}}dtype = i4, scale = per_token_group, group = 32>

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: dtype = i4, scale = per_token_group, group = 16> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: dtype = bf16> {folio.onnx_name = "kv_cache.1"}
module attributes {folio.kv_cache_dtype = "int4"} {
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x2x64xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.1"}) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    folio.kv_write %c1, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    return
  }
}

// -----

// Tests that f16 and bf16 caches are unscaled floats, and that skip-layers
// does not change an unquantized dtype.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.1"}
// CHECK: folio.kv_write {{.*}}dtype = f16>

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: dtype = f16> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: dtype = f16> {folio.onnx_name = "kv_cache.1"}
module attributes {folio.kv_cache_dtype = "f16"} {
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x2x8xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.1"}) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    folio.kv_write %c1, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    return
  }
}

// -----

// Tests that f32 makes every cache f32, whatever page-kv's element type:
// an f16 or bf16 model's caches become f32 too.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.1"}
// CHECK-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.2"}
// CHECK: folio.kv_write {{.*}}dtype = f32>
// CHECK: folio.kv_write {{.*}}dtype = f32>
// CHECK: folio.kv_write {{.*}}dtype = f32>

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: dtype = f32> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: dtype = f32> {folio.onnx_name = "kv_cache.1"}
// SKIP-SAME: dtype = f32> {folio.onnx_name = "kv_cache.2"}
module attributes {folio.kv_cache_dtype = "f32"} {
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x2x8xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = bf16> {folio.onnx_name = "kv_cache.1"},
                     %c2: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.2"}) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f16>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    folio.kv_write %c1, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = bf16>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    folio.kv_write %c2, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi64>
    return
  }
}

// -----

// Tests that the default int4 group is the largest even divisor of each
// layer's head_dim up to 32: 20 for head_dim 80, 28 for 112, 24 for 48,
// the whole head for 6. An explicit group-size is taken as given: 16 for
// every quantized layer in the skip-layers run, where layer 1 (head_dim 6,
// which 16 does not divide) stays at bf16.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 80, block = 16, dtype = i4, scale = per_token_group, group = 20> {folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 6, block = 16, dtype = i4, scale = per_token_group, group = 6> {folio.onnx_name = "kv_cache.1"}
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 112, block = 16, dtype = i4, scale = per_token_group, group = 28> {folio.onnx_name = "kv_cache.2"}
// CHECK-SAME: !folio.kv_cache<heads = 1, head_dim = 48, block = 16, dtype = i4, scale = per_token_group, group = 24> {folio.onnx_name = "kv_cache.3"}
// CHECK: folio.kv_write {{.*}}head_dim = 80, {{.*}}group = 20>
// CHECK: folio.kv_write {{.*}}head_dim = 6, {{.*}}group = 6>
// CHECK: folio.kv_write {{.*}}head_dim = 112, {{.*}}group = 28>
// CHECK: folio.kv_write {{.*}}head_dim = 48, {{.*}}group = 24>

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: head_dim = 80, block = 16, dtype = i4, scale = per_token_group, group = 16> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: head_dim = 6, block = 16, dtype = bf16> {folio.onnx_name = "kv_cache.1"}
// SKIP-SAME: head_dim = 112, block = 16, dtype = i4, scale = per_token_group, group = 16> {folio.onnx_name = "kv_cache.2"}
// SKIP-SAME: head_dim = 48, block = 16, dtype = i4, scale = per_token_group, group = 16> {folio.onnx_name = "kv_cache.3"}
module attributes {folio.kv_cache_dtype = "int4"} {
  func.func @forward(%slots: tensor<?xi64>, %k80: tensor<?x1x80xf32>, %k6: tensor<?x1x6xf32>,
                     %k112: tensor<?x1x112xf32>, %k48: tensor<?x1x48xf32>,
                     %c0: !folio.kv_cache<heads = 1, head_dim = 80, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 1, head_dim = 6, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.1"},
                     %c2: !folio.kv_cache<heads = 1, head_dim = 112, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.2"},
                     %c3: !folio.kv_cache<heads = 1, head_dim = 48, block = 16, dtype = f16> {folio.onnx_name = "kv_cache.3"}) {
    folio.kv_write %c0, %k80, %k80, %slots : !folio.kv_cache<heads = 1, head_dim = 80, block = 16, dtype = f16>, tensor<?x1x80xf32>, tensor<?x1x80xf32>, tensor<?xi64>
    folio.kv_write %c1, %k6, %k6, %slots : !folio.kv_cache<heads = 1, head_dim = 6, block = 16, dtype = f16>, tensor<?x1x6xf32>, tensor<?x1x6xf32>, tensor<?xi64>
    folio.kv_write %c2, %k112, %k112, %slots : !folio.kv_cache<heads = 1, head_dim = 112, block = 16, dtype = f16>, tensor<?x1x112xf32>, tensor<?x1x112xf32>, tensor<?xi64>
    folio.kv_write %c3, %k48, %k48, %slots : !folio.kv_cache<heads = 1, head_dim = 48, block = 16, dtype = f16>, tensor<?x1x48xf32>, tensor<?x1x48xf32>, tensor<?xi64>
    return
  }
}

// -----

// Tests that int2 caches get KIVI: keys per channel over a block, values per
// token over groups of group-size channels (the int4 default: the largest
// even divisor of head_dim up to 32), and a residual window of 128 tokens
// rounded up to whole blocks (256 for block 256); no scale operands appear.
// A skipped layer stays at bf16.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[C0:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 128, group = 32> {folio.onnx_name = "kv_cache.0"}
// CHECK-SAME: %[[C1:[^:]*]]: !folio.kv_cache<heads = 2, head_dim = 80, block = 256, dtype = i2, scale = kivi, residual = 256, group = 20> {folio.onnx_name = "kv_cache.1"}
// CHECK-NOT: arith.constant
// CHECK: folio.kv_write %[[C0]], %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} : !folio.kv_cache<{{.*}}dtype = i2, scale = kivi, residual = 128, group = 32>
// CHECK: folio.paged_attention %{{[^ ]*}}, %[[C0]], %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} {scale
// CHECK: folio.kv_write %[[C1]], %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} : !folio.kv_cache<{{.*}}dtype = i2, scale = kivi, residual = 256, group = 20>

// SKIP-LABEL: func.func @forward(
// SKIP-SAME: head_dim = 64, block = 16, dtype = i2, scale = kivi, residual = 128, group = 16> {folio.onnx_name = "kv_cache.0"}
// SKIP-SAME: !folio.kv_cache<heads = 2, head_dim = 80, block = 256, dtype = bf16> {folio.onnx_name = "kv_cache.1"}
// SKIP-NOT: arith.constant
module attributes {folio.kv_cache_dtype = "int2"} {
  func.func @forward(%slots: tensor<?xi64>, %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                     %q: tensor<?x4x64xf32>, %k: tensor<?x2x64xf32>, %k80: tensor<?x2x80xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32> {folio.onnx_name = "kv_cache.0"},
                     %c1: !folio.kv_cache<heads = 2, head_dim = 80, block = 256, dtype = f16> {folio.onnx_name = "kv_cache.1"})
      -> tensor<?x4x64xf32> {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    %a = folio.paged_attention %q, %c0, %bt, %lens, %qsl {scale = 0.125 : f64} : (tensor<?x4x64xf32>, !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x64xf32>
    folio.kv_write %c1, %k80, %k80, %slots : !folio.kv_cache<heads = 2, head_dim = 80, block = 256, dtype = f16>, tensor<?x2x80xf32>, tensor<?x2x80xf32>, tensor<?xi64>
    return %a : tensor<?x4x64xf32>
  }
}
