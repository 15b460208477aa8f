//===- ModelKernelRegistry.h - The models' kernels on the fake driver -*- C++
//-*-===//
//
// Points the runtime at the fake driver and registers every kernel of the
// zoo models' plans, compiled as host C++ at build time
// (ModelKernelTable.h), so that runtime/Device loads and launches them as
// it would on a GPU. Include after codegen/CUDA/Emulation/Emulation.h.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELREGISTRY_H
#define FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELREGISTRY_H

#include "test/unittests/CUDA/FakeDriver.h"
#include "test/unittests/CUDA/ModelKernelTable.h"

#include <map>
#include <string>

namespace folio::cuda::test {

/// Registers the kernels; `generated` gets them by name. False with
/// `error` set when the fake driver does not load.
inline bool
registerModelKernels(std::map<std::string, const ModelKernelEntry *> &generated,
                     std::string &error) {
  RegisterFn reg =
      useFakeDriver(FOLIO_FAKE_CUDA_DEVICE, FOLIO_FAKE_CUBLASLT, error);
  if (!reg)
    return false;
  for (auto accessor : {&modelAttentionKernels, &modelOtherKernels}) {
    size_t n = 0;
    const ModelKernelEntry *entries = accessor(n);
    for (size_t i = 0; i < n; ++i) {
      generated[entries[i].name] = &entries[i];
      reg(entries[i].name, entries[i].launch, entries[i].argBytes,
          entries[i].kernel);
    }
  }
  return true;
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELREGISTRY_H
