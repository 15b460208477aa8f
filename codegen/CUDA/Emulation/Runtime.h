//===- Runtime.h - Grid scheduler of the CUDA host emulation ----*- C++ -*-===//
//
// Runs a kernel's grid on the CPU: each OS worker takes whole blocks, one at
// a time; a block's threads are fibers (Fiber.h) that run until they block
// in a barrier or a warp collective. The builtins (threadIdx, ...) are
// thread_local variables rewritten on every switch (Builtins.h), and
// __shared__ variables are thread_local too, so the fibers of a block share
// them and blocks on different workers do not.
//
// A block in which no thread can run while some have not exited is a
// deadlock: the emulation prints which threads wait where and aborts, as
// it does for a warp collective whose lanes disagree on the mask.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_EMULATION_RUNTIME_H
#define FOLIO_CODEGEN_CUDA_EMULATION_RUNTIME_H

#include <cstddef>
#include <cstdint>

namespace folio::cuda_emu {

struct Extent {
  unsigned x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

struct LaunchConfig {
  Extent grid, block;
  /// Bytes of dynamic shared memory per block (allocated at exactly this
  /// size and filled with 0xff at each block start, so that an overrun or
  /// an uninitialized read shows up).
  size_t dynamicShared = 0;
  /// OS threads running blocks; 1 (the default) makes float atomics and
  /// every other order deterministic.
  unsigned workers = 1;
  /// 0: runnable threads run in index order. Otherwise the order is
  /// shuffled before every pass, from this seed: a missing __syncthreads
  /// that index order happens to hide then changes results.
  uint64_t scheduleSeed = 0;
  /// Name printed in diagnostics.
  const char *kernelName = "kernel";
};

/// Runs body(arg) as every thread of the grid; returns when all are done.
/// Aborts on a deadlock, a misused collective, or a block of more than
/// 1024 threads.
void launchGrid(const LaunchConfig &config, void (*body)(void *), void *arg);

enum class BarrierOp { Sync, Count, And, Or };

/// __syncthreads and its predicate variants: waits for every live thread
/// of the block and returns the reduced predicate (Sync: 0).
int blockBarrier(BarrierOp op, int predicate);

/// One warp-collective round: waits until every live lane in `mask` has
/// called with the same mask, then returns the round's slots (slot i holds
/// the `bytes` (<= 16) lane i passed; valid until this lane's next
/// collective) and sets `arrived` to the lanes that took part.
const unsigned char (*warpExchange(unsigned mask, const void *value,
                                   size_t bytes, unsigned &arrived))[16];

/// This thread's lane and the mask of its warp's lanes that have not
/// exited.
unsigned laneId();
unsigned liveLanes();

/// The block's dynamic shared memory (LaunchConfig::dynamicShared bytes).
void *dynamicShared();

/// Prints `message` with the current block and thread, then aborts (a
/// kernel's trap or failed assertion).
[[noreturn]] void trap(const char *message);

} // namespace folio::cuda_emu

#endif // FOLIO_CODEGEN_CUDA_EMULATION_RUNTIME_H
