// RUN: folio-opt %s --folio-compile | FileCheck %s --check-prefix=DEFAULT
// RUN: folio-opt %s --folio-compile="target=sm_90a" | FileCheck %s --check-prefix=HOPPER
// RUN: folio-opt %s --folio-compile="target=sm_86 kv-cache-dtype=fp8_e5m2 block-size=8" | FileCheck %s --check-prefix=CUSTOM
// RUN: not folio-opt %s --folio-compile="target=h100" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that the compile pipeline carries its options to the passes it runs.

// DEFAULT: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "int8", folio.target = "cpu"}
// HOPPER: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "fp8_e4m3", folio.target = "sm_90a"}
// CUSTOM: module attributes {folio.block_size = 8 : i64, folio.kv_cache_dtype = "fp8_e5m2", folio.target = "sm_86"}
// BAD: unknown target 'h100'; supported: cpu, sm_80, sm_86, sm_89, sm_90a
module {
  func.func @forward() {
    return
  }
}
