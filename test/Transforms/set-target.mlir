// RUN: folio-opt %s --folio-set-target | FileCheck %s --check-prefix=CPU
// RUN: folio-opt %s --folio-set-target | folio-opt --folio-set-target | FileCheck %s --check-prefix=CPU
// RUN: folio-opt %s --folio-set-target="target=sm_90a" | FileCheck %s --check-prefix=HOPPER
// RUN: folio-opt %s --folio-set-target="target=sm_89 block-size=32" | FileCheck %s --check-prefix=ADA
// RUN: folio-opt %s --folio-set-target="target=sm_80" | FileCheck %s --check-prefix=AMPERE
// RUN: folio-opt %s --folio-set-target="target=sm_90a kv-cache-dtype=int4 block-size=256" | FileCheck %s --check-prefix=EXPLICIT

// Tests that the target, the resolved KV-cache dtype and the block size land
// on the module, with `auto` resolved per target.

// CPU: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "int8", folio.target = "cpu"}
// HOPPER: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "fp8_e4m3", folio.target = "sm_90a"}
// ADA: module attributes {folio.block_size = 32 : i64, folio.kv_cache_dtype = "fp8_e4m3", folio.target = "sm_89"}
// AMPERE: module attributes {folio.block_size = 16 : i64, folio.kv_cache_dtype = "int8", folio.target = "sm_80"}
// EXPLICIT: module attributes {folio.block_size = 256 : i64, folio.kv_cache_dtype = "int4", folio.target = "sm_90a"}
module {
  func.func @forward() {
    return
  }
}
