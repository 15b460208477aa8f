//===- TestVariants.h - The kernel variants the CUDA tests cover -*- C++
//-*-===//
//
// One list for the generator of the emulated test kernels, the emulation
// tests and the NVRTC tests: every cache type, GQA and MHA, head dims that
// are and are not multiples of 32, groups smaller and larger than a warp.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_TESTVARIANTS_H
#define FOLIO_TEST_UNITTESTS_CUDA_TESTVARIANTS_H

#include "codegen/CUDA/KernelSpec.h"

#include <vector>

namespace folio::cuda::test {

inline std::vector<KVWriteSpec> kvWriteVariants() {
  using cpu::DType;
  return {
      {DType::F32, 64, 2, 0},     {DType::BF16, 64, 2, 0},
      {DType::F16, 80, 2, 0},     {DType::FP8E4M3, 64, 2, 0},
      {DType::FP8E5M2, 64, 2, 0}, {DType::I8, 64, 2, 64},
      {DType::I8, 80, 1, 16},     {DType::I4, 64, 2, 32},
      {DType::I4, 80, 2, 80},
  };
}

inline std::vector<PagedDecodeSpec> pagedDecodeVariants() {
  using cpu::DType;
  // cache, head_dim, block, kv heads, q per kv, group, partition, threads
  return {
      {DType::F32, 64, 16, 2, 2, 0, 64, 64},
      {DType::BF16, 64, 16, 2, 2, 0, 64, 64},
      {DType::F16, 80, 8, 1, 1, 0, 32, 128},
      {DType::FP8E4M3, 64, 16, 2, 2, 0, 64, 64},
      {DType::FP8E5M2, 64, 16, 1, 4, 0, 64, 64},
      {DType::I8, 64, 16, 2, 2, 64, 64, 64},
      {DType::I4, 64, 16, 2, 2, 32, 64, 64},
      {DType::I4, 80, 8, 1, 4, 16, 48, 96},
  };
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_TESTVARIANTS_H
