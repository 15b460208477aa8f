//===- Builtins.h - threadIdx & co. for the CUDA host emulation -*- C++ -*-===//
//
// thread_local, so each OS worker has its own; the scheduler rewrites them
// whenever it switches fibers, and kernels read them unchanged. They need
// the toolkit's vector_types.h (uint3, dim3), which compiles as host C++.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_EMULATION_BUILTINS_H
#define FOLIO_CODEGEN_CUDA_EMULATION_BUILTINS_H

#include <vector_types.h>

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
constexpr int warpSize = 32;

#endif // FOLIO_CODEGEN_CUDA_EMULATION_BUILTINS_H
