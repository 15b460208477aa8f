//===- EmulationTest.cpp - The CUDA host emulation itself -----------------===//
//
// Kernels written here as a GPU would run them; each test checks a result
// that a wrong barrier, lane rule or mask would change.
//
//===----------------------------------------------------------------------===//

#include "codegen/CUDA/Emulation/Emulation.h"

#include <gtest/gtest.h>

#include <vector>

using folio::cuda_emu::launch;
using folio::cuda_emu::LaunchConfig;

namespace {

LaunchConfig config(unsigned grid, unsigned block, size_t dyn = 0) {
  LaunchConfig c;
  c.grid.x = grid;
  c.block.x = block;
  c.dynamicShared = dyn;
  return c;
}

// Each thread writes its slot, then reads its mirror image: without a real
// barrier the first threads would read 0xff... (uninitialized) slots.
__global__ void reverseKernel(int *out) {
  __shared__ int s[256];
  s[threadIdx.x] = int(threadIdx.x) * 3 + int(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

TEST(CudaEmulation, BarrierOrdersSharedMemory) {
  std::vector<int> out(3 * 96, -1);
  launch(config(3, 96), reverseKernel, out.data());
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 96; ++t)
      EXPECT_EQ(out[b * 96 + t], (95 - t) * 3 + b) << b << " " << t;
}

__global__ void barrierPredicates(int *out) {
  int count = __syncthreads_count(threadIdx.x % 3 == 0);
  int all = __syncthreads_and(threadIdx.x < 1000);
  int any = __syncthreads_or(threadIdx.x == 50);
  int none = __syncthreads_or(0);
  if (threadIdx.x == 7) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
    out[3] = none;
  }
}

TEST(CudaEmulation, BarrierPredicates) {
  int out[4] = {-1, -1, -1, -1};
  launch(config(1, 70), barrierPredicates, out);
  EXPECT_EQ(out[0], 24); // 0, 3, ..., 69
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 1);
  EXPECT_EQ(out[3], 0);
}

// Threads that return early are not waited for by later barriers.
__global__ void earlyExit(int *out) {
  if (threadIdx.x >= 40)
    return;
  __shared__ int sum;
  if (threadIdx.x == 0)
    sum = 0;
  __syncthreads();
  atomicAdd(&sum, 1);
  __syncthreads();
  if (threadIdx.x == 0)
    *out = sum;
}

TEST(CudaEmulation, ExitedThreadsAreNotWaitedFor) {
  int out = -1;
  launch(config(1, 128), earlyExit, &out);
  EXPECT_EQ(out, 40);
}

__global__ void shuffles(int *out) {
  int lane = int(threadIdx.x % 32), v = 100 + int(threadIdx.x);
  int *o = out + threadIdx.x * 5;
  o[0] = __shfl_sync(0xffffffffu, v, 3, 8);
  o[1] = __shfl_up_sync(0xffffffffu, v, 2, 16);
  o[2] = __shfl_down_sync(0xffffffffu, v, 5, 16);
  o[3] = __shfl_xor_sync(0xffffffffu, v, 12, 8);
  o[4] = __shfl_sync(0xffffffffu, v, lane + 1); // srcLane wraps modulo 32
}

TEST(CudaEmulation, ShufflesFollowThePtxLaneRules) {
  std::vector<int> out(64 * 5);
  launch(config(1, 64), shuffles, out.data());
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32, base = t - lane, v = 100 + t;
    const int *o = &out[t * 5];
    EXPECT_EQ(o[0], 100 + base + (lane & ~7) + 3) << t;
    EXPECT_EQ(o[1], lane % 16 >= 2 ? v - 2 : v) << t;
    EXPECT_EQ(o[2], lane % 16 + 5 < 16 ? v + 5 : v) << t;
    // xor 12 with width 8: lanes whose partner lies in a later segment of
    // 8 keep their own value; earlier segments may be read.
    int src = lane ^ 12;
    EXPECT_EQ(o[3], src < (lane & ~7) + 8 ? 100 + base + src : v) << t;
    EXPECT_EQ(o[4], 100 + base + (lane + 1) % 32) << t;
  }
}

__global__ void wideShuffles(double *d, __half2 *h) {
  double dv = threadIdx.x * 0.5;
  d[threadIdx.x] = __shfl_xor_sync(0xffffffffu, dv, 1);
  __half2 hv = __floats2half2_rn(float(threadIdx.x), -float(threadIdx.x));
  h[threadIdx.x] = __shfl_down_sync(0xffffffffu, hv, 1);
}

TEST(CudaEmulation, ShufflesMoveWideAndHalfTypes) {
  std::vector<double> d(32);
  std::vector<__half2> h(32);
  launch(config(1, 32), wideShuffles, d.data(), h.data());
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(d[t], (t ^ 1) * 0.5);
    int src = t < 31 ? t + 1 : t;
    EXPECT_EQ(__low2float(h[t]), float(src));
    EXPECT_EQ(__high2float(h[t]), -float(src));
  }
}

__global__ void votesAndReductions(unsigned *out) {
  unsigned lane = threadIdx.x % 32;
  unsigned *o = out + threadIdx.x * 8;
  o[0] = __ballot_sync(0xffffffffu, lane % 4 == 1);
  o[1] = unsigned(__any_sync(0xffffffffu, lane == 17));
  o[2] = unsigned(__all_sync(0xffffffffu, lane < 31));
  o[3] = __reduce_add_sync(0xffffffffu, lane);
  o[4] = __reduce_max_sync(0xffffffffu, lane * 7 % 32);
  o[5] = unsigned(__reduce_min_sync(0xffffffffu, int(lane) - 5));
  o[6] = __match_any_sync(0xffffffffu, lane / 8);
  // A reduction among the even lanes only.
  o[7] = lane % 2 == 0 ? __reduce_or_sync(0x55555555u, 1u << lane) : 0u;
}

TEST(CudaEmulation, VotesAndReductions) {
  std::vector<unsigned> out(32 * 8);
  launch(config(1, 32), votesAndReductions, out.data());
  for (unsigned t = 0; t < 32; ++t) {
    const unsigned *o = &out[t * 8];
    EXPECT_EQ(o[0], 0x22222222u);
    EXPECT_EQ(o[1], 1u);
    EXPECT_EQ(o[2], 0u);
    EXPECT_EQ(o[3], 496u);
    EXPECT_EQ(o[4], 31u); // lane * 7 % 32 is a permutation of the lanes
    EXPECT_EQ(int(o[5]), -5);
    EXPECT_EQ(o[6], 0xffu << (t / 8 * 8));
    EXPECT_EQ(o[7], t % 2 == 0 ? 0x55555555u : 0u);
  }
}

// A block of 40 threads has a partial second warp: its collectives involve
// only the 8 lanes that exist.
__global__ void partialWarp(int *out) {
  out[threadIdx.x] = __reduce_add_sync(0xffffffffu, 1);
}

TEST(CudaEmulation, PartialWarp) {
  std::vector<int> out(40);
  launch(config(1, 40), partialWarp, out.data());
  for (int t = 0; t < 40; ++t)
    EXPECT_EQ(out[t], t < 32 ? 32 : 8);
}

__global__ void dynamicSharedKernel(unsigned *out, int n) {
  unsigned *s = static_cast<unsigned *>(folio::cuda_emu::dynamicShared());
  if (threadIdx.x == 0)
    out[blockIdx.x * 2] = s[n - 1]; // not yet written: the 0xff fill
  __syncthreads();
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
    s[i] = unsigned(i) + blockIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned sum = 0;
    for (int i = 0; i < n; ++i)
      sum += s[i];
    out[blockIdx.x * 2 + 1] = sum;
  }
}

TEST(CudaEmulation, DynamicSharedMemoryIsFreshPerBlock) {
  const int n = 100;
  std::vector<unsigned> out(4);
  launch(config(2, 32, n * sizeof(unsigned)), dynamicSharedKernel, out.data(),
         n);
  for (unsigned b = 0; b < 2; ++b) {
    EXPECT_EQ(out[b * 2], 0xffffffffu);
    EXPECT_EQ(out[b * 2 + 1], unsigned(n * (n - 1) / 2) + n * b);
  }
}

// Reads a neighbour's slot without a barrier: index order hides the race
// (thread i - 1 always ran to its end before thread i starts).
__global__ void missingBarrier(unsigned *out) {
  unsigned *s = static_cast<unsigned *>(folio::cuda_emu::dynamicShared());
  s[threadIdx.x] = threadIdx.x;
  out[threadIdx.x] = threadIdx.x ? s[threadIdx.x - 1] : 0u;
}

TEST(CudaEmulation, ShuffledScheduleExposesAMissingBarrier) {
  const unsigned n = 64;
  std::vector<unsigned> out(n);
  LaunchConfig c = config(1, n, n * sizeof(unsigned));
  launch(c, missingBarrier, out.data());
  for (unsigned t = 0; t < n; ++t)
    ASSERT_EQ(out[t], t ? t - 1 : 0u);
  c.scheduleSeed = 7;
  launch(c, missingBarrier, out.data());
  int stale = 0; // reads of the 0xff fill: the neighbour had not run yet
  for (unsigned t = 0; t < n; ++t)
    stale += out[t] == 0xffffffffu;
  EXPECT_GT(stale, 0);
  // With the barrier's ordering restored by a correct kernel, shuffling
  // changes nothing (reverseKernel synchronizes).
  std::vector<int> a(96), b(96);
  LaunchConfig r = config(1, 96);
  launch(r, reverseKernel, a.data());
  r.scheduleSeed = 11;
  launch(r, reverseKernel, b.data());
  EXPECT_EQ(a, b);
}

__global__ void atomicsKernel(int *counter, float *sum, __half *hsum,
                              unsigned *mx) {
  atomicAdd(counter, 1);
  atomicAdd(sum, 0.5f);
  atomicAdd(hsum, __float2half(1.0f));
  atomicMax(mx, blockIdx.x * 1000 + threadIdx.x);
}

TEST(CudaEmulation, AtomicsAcrossWorkers) {
  LaunchConfig c = config(16, 64);
  c.workers = 4;
  int counter = 0;
  float sum = 0;
  __half hsum = __float2half(0.0f);
  unsigned mx = 0;
  launch(c, atomicsKernel, &counter, &sum, &hsum, &mx);
  EXPECT_EQ(counter, 16 * 64);
  EXPECT_EQ(sum, 512.0f);
  EXPECT_EQ(__half2float(hsum), 1024.0f); // exact in f16
  EXPECT_EQ(mx, 15063u);
}

__global__ void gridBuiltins(unsigned *out) {
  unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned t =
      (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[b * blockDim.x * blockDim.y * blockDim.z + t] = b * 1000 + t;
}

TEST(CudaEmulation, MultiDimensionalGrid) {
  LaunchConfig c;
  c.grid = {2, 3, 2};
  c.block = {4, 2, 3};
  std::vector<unsigned> out(12 * 24, 0);
  launch(c, gridBuiltins, out.data());
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 24; ++t)
      EXPECT_EQ(out[b * 24 + t], b * 1000 + t);
}

// The first warp and half of the second wait at __syncthreads, the other
// half of the second in a shuffle that needs the lanes at the barrier.
__global__ void deadlockKernel(int *out) {
  if (threadIdx.x < 48)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);
}

TEST(CudaEmulationDeathTest, DeadlockNamesWhereThreadsWait) {
  std::vector<int> out(64);
  EXPECT_DEATH(launch(config(1, 64), deadlockKernel, out.data()),
               "deadlock: no thread can run; 48 threads wait in "
               "__syncthreads \\(48 arrived of 64 live\\), 16 in a warp "
               "collective; warp 1: lanes 0xffff0000 wait with mask "
               "0xffffffff for lanes 0x0000ffff in block \\(0,0,0\\)");
}

__global__ void mismatchedMasks(int *out) {
  unsigned mask = threadIdx.x == 3 ? 0x0000000fu : 0xffffffffu;
  out[threadIdx.x] = __shfl_sync(mask, 1, 0);
}

TEST(CudaEmulationDeathTest, MismatchedMasksAreReported) {
  std::vector<int> out(32);
  EXPECT_DEATH(launch(config(1, 32), mismatchedMasks, out.data()),
               "lane 3 of warp 0 calls a warp collective with mask "
               "0x0000000f while lanes 0x00000007 of the same round used "
               "0xffffffff");
}

__global__ void maskWithoutSelf(int *out) {
  out[threadIdx.x] = __shfl_sync(0x1u, 1, 0);
}

TEST(CudaEmulationDeathTest, MaskWithoutTheLaneIsReported) {
  std::vector<int> out(32);
  EXPECT_DEATH(launch(config(1, 32), maskWithoutSelf, out.data()),
               "lane 1 of warp 0 calls a warp collective with mask "
               "0x00000001, which does not contain the lane itself");
}

} // namespace
