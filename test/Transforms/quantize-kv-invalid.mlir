// RUN: folio-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect --folio-quantize-kv
// RUN: not folio-opt %s --split-input-file --allow-unregistered-dialect --folio-quantize-kv="skip-layers=0,2" 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: not folio-opt %s --split-input-file --allow-unregistered-dialect --folio-quantize-kv="group-size=24" 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not folio-opt %s --split-input-file --allow-unregistered-dialect --folio-quantize-kv="group-size=7" 2>&1 | FileCheck %s --check-prefix=ODD
// RUN: not folio-opt %s --split-input-file --allow-unregistered-dialect --folio-quantize-kv="residual=24" 2>&1 | FileCheck %s --check-prefix=RESID
// RUN: not folio-opt %s --split-input-file --allow-unregistered-dialect --folio-quantize-kv="residual=-16" 2>&1 | FileCheck %s --check-prefix=NEGRESID

// Tests that the pass refuses what it cannot quantize, naming the layer,
// dtype or calibration entry, and the choices that would work.

// SKIP: skip-layers names layer 2, but the model has 2 layers with a KV cache (0 to 1)
// GROUP: int4 KV cache of layer 0: group-size 24 must be even and divide head_dim 64; allowed: 2, 4, 8, 16, 32, 64
// ODD: int4 KV cache of layer 0: group-size 7 must be even and divide head_dim 64; allowed: 2, 4, 8, 16, 32, 64
// GROUP: int2 KV cache of layer 0: group-size 24 must divide head_dim 64; allowed: 1, 2, 4, 8, 16, 32, 64
// ODD: int2 KV cache of layer 0: group-size 7 must divide head_dim 64; allowed: 1, 2, 4, 8, 16, 32, 64
// RESID: residual 24 is the full-precision window of an int2 (KIVI) cache; the KV cache dtype here is int4
// RESID: int2 KV cache of layer 0: residual 24 must be a positive multiple of the block size 16
// NEGRESID: int2 KV cache of layer 0: residual -16 must be a positive multiple of the block size 16

// expected-error @+1 {{folio-quantize-kv needs the module's folio.kv_cache_dtype (run folio-set-target)}}
module {
  func.func @forward() {
    return
  }
}

// -----

// expected-error @+1 {{unknown folio.kv_cache_dtype 'auto'; supported: f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2}}
module attributes {folio.kv_cache_dtype = "auto"} {
  func.func @forward() {
    return
  }
}

// -----

// expected-error @+1 {{no 'forward' entry: the module has not been through folio-page-kv}}
module attributes {folio.kv_cache_dtype = "int8"} {
  func.func @main() {
    return
  }
}

// -----

module attributes {folio.kv_cache_dtype = "int4"} {
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x2x64xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>,
                     %c1: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    folio.kv_write %c1, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    return
  }
}

// -----

// An int2 cache the options above refuse (group-size 24 or 7, residual 24
// or -16) and the defaults accept.
module attributes {folio.kv_cache_dtype = "int2"} {
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x2x64xf32>,
                     %c0: !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 2, head_dim = 64, block = 16, dtype = f32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?xi64>
    return
  }
}

// -----

// int2 packs four elements per byte: head_dim must be a multiple of 4.
module attributes {folio.kv_cache_dtype = "int2"} {
  // expected-error @+1 {{int2 KV cache of layer 0: head_dim 6 is not a multiple of 4 (four 2-bit elements per byte)}}
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x1x6xf32>,
                     %c0: !folio.kv_cache<heads = 1, head_dim = 6, block = 16, dtype = f32>) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 1, head_dim = 6, block = 16, dtype = f32>, tensor<?x1x6xf32>, tensor<?x1x6xf32>, tensor<?xi64>
    return
  }
}

// -----

// The default int4 group fits any even head_dim; an odd one has none.
module attributes {folio.kv_cache_dtype = "int4"} {
  // expected-error @+1 {{int4 KV cache of layer 0: head_dim 7 has no even divisor, so no int4 group fits (a group is an even number of elements that divides head_dim)}}
  func.func @forward(%slots: tensor<?xi64>, %k: tensor<?x1x7xf32>,
                     %c0: !folio.kv_cache<heads = 1, head_dim = 7, block = 16, dtype = f32>) {
    folio.kv_write %c0, %k, %k, %slots : !folio.kv_cache<heads = 1, head_dim = 7, block = 16, dtype = f32>, tensor<?x1x7xf32>, tensor<?x1x7xf32>, tensor<?xi64>
    return
  }
}

// -----

// expected-error @+1 {{folio.kv_calibration has shape [2, 2, 4] but the model's KV caches need [1, 2, 2] (layers, K and V, kv_heads)}}
module attributes {folio.kv_cache_dtype = "fp8_e4m3", folio.kv_calibration = dense<1.0> : tensor<2x2x4xf32>} {
  func.func @forward(%c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>) {
    return
  }
}

// -----

// expected-error @+1 {{folio.kv_calibration of layer 0, V head 1 is -2; an abs-max must be finite and >= 0}}
module attributes {folio.kv_cache_dtype = "fp8_e4m3", folio.kv_calibration = dense<[[[1.0, 1.0], [1.0, -2.0]]]> : tensor<1x2x2xf32>} {
  func.func @forward(%c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>) {
    return
  }
}

// -----

// expected-error @+1 {{folio.kv_calibration of layer 0, K head 0 is nan; an abs-max must be finite and >= 0}}
module attributes {folio.kv_cache_dtype = "fp8_e5m2", folio.kv_calibration = dense<[[[0x7FC00000], [1.0]]]> : tensor<1x2x1xf32>} {
  func.func @forward(%c0: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>) {
    return
  }
}

// -----

// expected-error @+1 {{folio.kv_calibration must be a dense f32 tensor [layers, 2, kv_heads], got dense<1.000000e+00> : tensor<1x2x1xf16>}}
module attributes {folio.kv_cache_dtype = "fp8_e5m2", folio.kv_calibration = dense<1.0> : tensor<1x2x1xf16>} {
  func.func @forward(%c0: !folio.kv_cache<heads = 1, head_dim = 8, block = 16, dtype = f32>) {
    return
  }
}

// -----

module attributes {folio.kv_cache_dtype = "fp8_e4m3", folio.kv_calibration = dense<1.0> : tensor<1x2x2xf32>} {
  // expected-error @+1 {{KV cache of layer 0 is already quantized ('!folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i8, scale = per_token_head>'); folio-quantize-kv retypes page-kv's caches once}}
  func.func @forward(%c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i8, scale = per_token_head>) {
    return
  }
}

// -----

module attributes {folio.kv_cache_dtype = "int8"} {
  func.func @forward(%c0: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>) {
    // expected-error @+1 {{uses the KV cache of layer 0; folio-quantize-kv runs before folio-fuse, where only kv_write and paged_attention do}}
    "test.use"(%c0) : (!folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>) -> ()
    return
  }
}
