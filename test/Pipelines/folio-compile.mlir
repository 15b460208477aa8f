// RUN: folioc %models/llama/cached.onnx --stop-after=import | folio-opt --folio-compile | FileCheck %s --check-prefix=DEFAULT
// RUN: folioc %models/llama/cached.onnx --stop-after=import | folio-opt --folio-compile="target=sm_90a block-size=32" | FileCheck %s --check-prefix=HOPPER
// RUN: folioc %models/llama/cached.onnx --stop-after=import | folio-opt --folio-compile="kv-cache-dtype=int4 kv-cache-group-size=4 kv-cache-dtype-skip-layers=1" | FileCheck %s --check-prefix=INT4
// RUN: not folio-opt %s --folio-compile="target=h100" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that the compile pipeline carries its options to the passes it runs
// and takes an imported model to the serving entry.

// DEFAULT: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "int8"
// DEFAULT-SAME: folio.target = "cpu"
// DEFAULT: func.func @forward(
// DEFAULT-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i8, scale = per_token_head> {{.*}}"kv_cache.0"
// DEFAULT-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i8, scale = per_token_head> {{.*}}"kv_cache.1"
// HOPPER: folio.kv_cache_dtype = "fp8_e4m3"
// HOPPER-SAME: folio.target = "sm_90a"
// HOPPER: func.func @forward(
// HOPPER-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 32, dtype = f8E4M3FN, scale = per_head>
// HOPPER: %[[S:.*]] = arith.constant dense<1.000000e+00> : tensor<2xf32>
// HOPPER: folio.kernel "rotary_kv_write"({{.*}}, %[[S]])
// HOPPER: folio.kv_write {{.*}} scales(%[[KS:[^,]*]], %[[KS]])
// HOPPER: folio.kernel "paged_attention"({{.*}}, %[[S]])
// INT4: func.func @forward(
// INT4-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = i4, scale = per_token_group, group = 4> {{.*}}"kv_cache.0"
// INT4-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = bf16> {{.*}}"kv_cache.1"
// BAD: unknown target 'h100'; supported: cpu, sm_80, sm_86, sm_89, sm_90a
module {
}
