//===- EmulationLaunch.h - Launch geometry for the emulation ----*- C++ -*-===//

#ifndef FOLIO_TEST_UNITTESTS_CUDA_EMULATIONLAUNCH_H
#define FOLIO_TEST_UNITTESTS_CUDA_EMULATIONLAUNCH_H

#include "codegen/CUDA/Emulation/Runtime.h"
#include "codegen/CUDA/KernelSpec.h"

namespace folio::cuda::test {

inline cuda_emu::LaunchConfig emulationConfig(const LaunchGeometry &g,
                                              const char *name) {
  cuda_emu::LaunchConfig c;
  c.grid = {g.grid[0], g.grid[1], g.grid[2]};
  c.block = {g.block[0], g.block[1], g.block[2]};
  c.dynamicShared = g.dynamicShared;
  c.kernelName = name;
  return c;
}

} // namespace folio::cuda::test

#endif // FOLIO_TEST_UNITTESTS_CUDA_EMULATIONLAUNCH_H
