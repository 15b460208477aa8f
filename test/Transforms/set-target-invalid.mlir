// RUN: folio-opt %s --verify-diagnostics --folio-set-target="target=sm_75"
// RUN: not folio-opt %s --folio-set-target="kv-cache-dtype=fp8" 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not folio-opt %s --folio-set-target="block-size=24" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not folio-opt %s --folio-set-target="block-size=-4" 2>&1 | FileCheck %s --check-prefix=BLOCK0

// Tests that unknown targets, dtypes and block sizes are refused with the
// supported choices named.

// expected-error @+1 {{unknown target 'sm_75'; supported: cpu, sm_80, sm_86, sm_89, sm_90a}}
module {
}

// DTYPE: unknown kv-cache-dtype 'fp8'; supported: auto, f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int4, int2
// BLOCK: block-size must be a power of two from 1 to 256, got 24
// BLOCK0: block-size must be a power of two from 1 to 256, got -4
