//===- CudaExecutor.h - Runs a plan's forward on one GPU --------*- C++ -*-===//
//
// The CUDA executor: the plan's blob and embedded kernels on the device
// (DevicePlan), the paged KV cache in device memory, and each forward as the
// launches PlanLaunches.h derives from the plan's kernels, every argument
// struct filled from where its values live. Decode steps replay a CUDA
// graph per batch bucket and context range instead (captured at a key's
// first step; ExecutorOptions::cudaGraphs). The host uploads the step's
// serving-contract arrays and reads back the logits rows; nothing else
// crosses. Speculative verification runs the plan's verify entry on those
// host logits (runtime/Executor/RunVerify.h).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_RUNTIME_DEVICE_CUDAEXECUTOR_H
#define FOLIO_RUNTIME_DEVICE_CUDAEXECUTOR_H

#include "runtime/Device/CudaDevice.h"
#include "runtime/Device/DeviceSelection.h"
#include "runtime/Executor/Executor.h"

#include <memory>

namespace folio::device {

/// An executor on `device`. load() refuses a plan without CUDA kernels for
/// the device (compile it with folioc --target=sm_XX) and one with a
/// kernel the CUDA generators do not cover, naming the kernel.
std::unique_ptr<exec::Executor>
createCudaExecutor(std::unique_ptr<CudaDevice> device,
                   const exec::ExecutorOptions &options = {});

/// The executor `choice` names: the CPU executor, or the CUDA executor on
/// device 0 (opened here; an error says why it cannot be).
Expected<std::unique_ptr<exec::Executor>>
createExecutor(const DeviceChoice &choice,
               const exec::ExecutorOptions &options = {});

} // namespace folio::device

#endif // FOLIO_RUNTIME_DEVICE_CUDAEXECUTOR_H
