//===- RowEmitter.h - CUDA C++ for a row program ----------------*- C++ -*-===//
//
// The expression emitter of fused row kernels: turns a RowKernelSpec's
// program into the body of its entry point (Emitter.cpp wraps it with the
// templates and the signature).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_ROWEMITTER_H
#define FOLIO_CODEGEN_CUDA_ROWEMITTER_H

#include "codegen/CPU/Status.h"
#include "codegen/CUDA/KernelSpec.h"

#include <string>

namespace folio::cuda {

/// The statements of the kernel body for a validated spec: loads,
/// elementwise expressions and stores in loops over the elements a thread
/// owns, closed by each norm's block reduction. Fails on a norm of a
/// value that is not per element (a constant or a scalar input).
cpu::Status emitRowBody(const RowKernelSpec &spec, std::string &body);

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_ROWEMITTER_H
