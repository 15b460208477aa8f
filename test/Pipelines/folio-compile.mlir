// RUN: folioc %models/llama/cached.onnx --stop-after=import | folio-opt --folio-compile | FileCheck %s --check-prefix=DEFAULT
// RUN: folioc %models/llama/cached.onnx --stop-after=import | folio-opt --folio-compile="target=sm_90a block-size=32" | FileCheck %s --check-prefix=HOPPER
// RUN: not folio-opt %s --folio-compile="target=h100" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that the compile pipeline carries its options to the passes it runs
// and takes an imported model to the serving entry.

// DEFAULT: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "int8"
// DEFAULT-SAME: folio.target = "cpu"
// DEFAULT: func.func @forward(
// DEFAULT-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 16, dtype = f32>
// HOPPER: folio.kv_cache_dtype = "fp8_e4m3"
// HOPPER-SAME: folio.target = "sm_90a"
// HOPPER: func.func @forward(
// HOPPER-SAME: !folio.kv_cache<heads = 2, head_dim = 8, block = 32, dtype = f32>
// BAD: unknown target 'h100'; supported: cpu, sm_80, sm_86, sm_89, sm_90a
module {
}
