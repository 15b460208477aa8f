//===- Emitter.h - CUDA C++ source for Folio's kernels ----------*- C++ -*-===//
//
// A generated kernel is the templates it instantiates (Templates/*.cuh,
// shared by every variant) plus generated glue: a config struct holding the
// spec as compile-time constants and an extern "C" __global__ entry point
// named after the spec. Its source compiles on its own with NVRTC or nvcc
// (only the toolkit's headers), and as host C++ after
// Emulation/Emulation.h; sources of several kernels concatenate into one
// translation unit (templates and glue are include-guarded).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_EMITTER_H
#define FOLIO_CODEGEN_CUDA_EMITTER_H

#include "codegen/CPU/Status.h"
#include "codegen/CUDA/KernelSpec.h"

#include <string>
#include <vector>

namespace folio::cuda {

struct GeneratedKernel {
  std::string name; ///< extern "C" entry point
  std::string key;  ///< canonicalKey of the spec
  /// The whole .cu text: a header comment, the templates, the glue.
  std::string source;
};

/// kv_write: one kernel taking folio_cuda::KVWriteArgs by value.
cpu::Status emitKVWrite(const KVWriteSpec &spec, GeneratedKernel &out);

/// Paged decode attention: the main kernel and the split-K combine, both
/// taking folio_cuda::PagedDecodeArgs by value.
cpu::Status emitPagedDecode(const PagedDecodeSpec &spec, GeneratedKernel &main,
                            GeneratedKernel &combine);

/// Paged prefill / mixed-batch attention, taking
/// folio_cuda::PagedPrefillArgs.
cpu::Status emitPagedPrefill(const PagedPrefillSpec &spec,
                             GeneratedKernel &out);

/// A fused row kernel from its program (RowEmitter.h), taking
/// folio_cuda::RowArgs.
cpu::Status emitRowKernel(const RowKernelSpec &spec, GeneratedKernel &out);

/// Rotary embedding, taking folio_cuda::RotaryArgs.
cpu::Status emitRotary(const RotarySpec &spec, GeneratedKernel &out);

/// Embedding lookup or gather_rows, taking folio_cuda::GatherArgs.
cpu::Status emitGather(const GatherSpec &spec, GeneratedKernel &out);

/// Sampling, taking folio_cuda::SampleArgs.
cpu::Status emitSample(const SampleSpec &spec, GeneratedKernel &out);

/// Linear over stored weights, taking folio_cuda::LinearArgs.
cpu::Status emitLinear(const LinearSpec &spec, GeneratedKernel &out);

/// The argument struct a kernel of `spec` takes ("LinearArgs": the name in
/// namespace folio_cuda, Templates/KernelArgs.cuh).
const char *argsTypeName(const AnyKernelSpec &spec);

/// An element cast, taking folio_cuda::CastArgs.
cpu::Status emitCast(const CastSpec &spec, GeneratedKernel &out);

} // namespace folio::cuda

#endif // FOLIO_CODEGEN_CUDA_EMITTER_H
