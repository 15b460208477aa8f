//===- ModelKernelTable.h - The models' kernels compiled as host C++ -*- C++
//-*-===//
//
// GenerateModelKernels writes every kernel of the zoo models' plans
// (ModelKernels.h) into two translation units, attention and the rest,
// each ending with a table of these entries and an accessor.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELTABLE_H
#define FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELTABLE_H

#include <cstddef>

namespace folio::cuda::test {

struct ModelKernelEntry {
  const char *name;
  void *kernel; ///< the extern "C" entry point, compiled as host C++
  /// Runs it on the fake driver (FakeDriver.h's emulate<its Args>).
  void (*launch)(void *, void **, const unsigned *, const unsigned *, unsigned);
  size_t argBytes; ///< sizeof its argument struct
};

const ModelKernelEntry *modelAttentionKernels(size_t &count);
const ModelKernelEntry *modelOtherKernels(size_t &count);

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_MODELKERNELTABLE_H
