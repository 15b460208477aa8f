//===- MmaEmulationTest.cpp - The mma.sync twin against PTX's layouts ----===//
//
// Templates/Mma.cuh's portable twin of mma.sync.m16n8k16 (bf16 in, f32
// accumulation) runs here through the emulation. The test places A, B and
// C in the lanes' registers by PTX's fragment rules, written out again
// below from the ISA, so a twin that read another layout than the hardware
// fails. Small integer inputs make every sum exact, so results must match
// the product bit for bit.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

#include "codegen/CUDA/Templates/Prelude.cuh"

#include "codegen/CUDA/Templates/Mma.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

using folio::cuda_emu::launch;
using folio::cuda_emu::LaunchConfig;

// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type":
// groupID = lane >> 2, threadID_in_group = lane % 4.
__device__ int aRow(int lane, int i) { // element a_i, i in 0..7
  return (lane >> 2) + ((i >= 2 && i < 4) || i >= 6 ? 8 : 0);
}
__device__ int aCol(int lane, int i) {
  return (lane % 4) * 2 + (i & 1) + (i >= 4 ? 8 : 0);
}
__device__ int bRow(int lane, int i) { // element b_i, i in 0..3
  return (lane % 4) * 2 + (i & 1) + (i >= 2 ? 8 : 0);
}
__device__ int bCol(int lane, int) { return lane >> 2; }
__device__ int cRow(int lane, int i) { // element c_i, i in 0..3
  return (lane >> 2) + (i >= 2 ? 8 : 0);
}
__device__ int cCol(int lane, int i) { return (lane % 4) * 2 + (i & 1); }

/// One 16 x 16 x 8 product per warp: a [warps][16][16], b [warps][16][8],
/// c [warps][16][8] (accumulated in place).
__global__ void mmaKernel(const float *a, const float *b, float *c) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  a += warp * 256;
  b += warp * 128;
  c += warp * 128;
  unsigned af[4], bf[2];
  float cf[4];
  for (int r = 0; r < 4; ++r)
    af[r] = folio_cuda::packBf16x2(
        a[aRow(lane, 2 * r) * 16 + aCol(lane, 2 * r)],
        a[aRow(lane, 2 * r + 1) * 16 + aCol(lane, 2 * r + 1)]);
  for (int r = 0; r < 2; ++r)
    bf[r] = folio_cuda::packBf16x2(
        b[bRow(lane, 2 * r) * 8 + bCol(lane, 2 * r)],
        b[bRow(lane, 2 * r + 1) * 8 + bCol(lane, 2 * r + 1)]);
  for (int i = 0; i < 4; ++i)
    cf[i] = c[cRow(lane, i) * 8 + cCol(lane, i)];
  folio_cuda::mmaBf16(cf, af, bf);
  for (int i = 0; i < 4; ++i)
    c[cRow(lane, i) * 8 + cCol(lane, i)] = cf[i];
}

TEST(CudaMmaEmulation, TheTwinMultipliesPtxFragments) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-8, 8);
  for (int warps : {1, 3}) {
    SCOPED_TRACE(warps);
    std::vector<float> a(size_t(warps) * 256), b(size_t(warps) * 128),
        c(size_t(warps) * 128);
    for (float &x : a)
      x = float(small(rng));
    for (float &x : b)
      x = float(small(rng)) * 0.5f;
    for (float &x : c)
      x = float(small(rng));
    std::vector<float> want = c;
    for (int w = 0; w < warps; ++w)
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n)
          for (int k = 0; k < 16; ++k)
            want[size_t(w * 128 + m * 8 + n)] +=
                a[size_t(w * 256 + m * 16 + k)] *
                b[size_t(w * 128 + k * 8 + n)];
    LaunchConfig config;
    config.grid.x = 1;
    config.block.x = unsigned(32 * warps);
    config.scheduleSeed = 11;
    launch(config, mmaKernel, a.data(), b.data(), c.data());
    for (size_t i = 0; i < c.size(); ++i)
      EXPECT_EQ(c[i], want[i]) << "warp " << i / 128 << ", C[" << i % 128 / 8
                               << "][" << i % 8 << "]";
  }
}

__global__ void packKernel(const float *in, unsigned *out, float *back) {
  int t = int(threadIdx.x);
  out[t] = folio_cuda::packBf16x2(in[2 * t], in[2 * t + 1]);
  back[2 * t] = folio_cuda::bf16x2Lo(out[t]);
  back[2 * t + 1] = folio_cuda::bf16x2Hi(out[t]);
}

TEST(CudaMmaEmulation, PairsRoundToNearestEvenLowIndexLow) {
  auto bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  // 1 + 2^-8 (a tie: to even, 1), 1 + 3 * 2^-8 (a tie: up), -2.5, a value
  // just above a tie (up), 0 and -0.
  std::vector<float> in = {bits(0x3f808000u),
                           bits(0x3f818000u),
                           -2.5f,
                           bits(0x3f808001u),
                           0.0f,
                           -0.0f};
  std::vector<unsigned> out(3);
  std::vector<float> back(6);
  LaunchConfig config;
  config.grid.x = 1;
  config.block.x = 3;
  launch(config, packKernel, in.data(), out.data(), back.data());
  EXPECT_EQ(out[0], 0x3f823f80u);
  EXPECT_EQ(out[1], 0x3f81c020u);
  EXPECT_EQ(out[2], 0x80000000u);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], bits(0x3f820000u));
  EXPECT_EQ(back[2], -2.5f);
  EXPECT_EQ(back[3], bits(0x3f810000u));
}

} // namespace
