//===- Fiber.h - Cooperative fibers for the CUDA host emulation -*- C++ -*-===//
//
// A fiber is a stack and a saved stack pointer; switching is a hand-written
// x86-64 routine that saves only the callee-saved registers, MXCSR and the
// x87 control word (ucontext makes a sigprocmask syscall per switch, about
// 35x slower, which is what would make emulating a block of 128 threads
// unusable). Fibers never migrate between OS threads and are never
// preempted: one runs until it switches away.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CUDA_EMULATION_FIBER_H
#define FOLIO_CODEGEN_CUDA_EMULATION_FIBER_H

#include <cstddef>

namespace folio::cuda_emu {

/// One mmap'd stack with a guard page below it (an overflow faults instead
/// of corrupting a neighbour's stack).
class FiberStack {
public:
  explicit FiberStack(size_t bytes);
  ~FiberStack();
  FiberStack(const FiberStack &) = delete;
  FiberStack &operator=(const FiberStack &) = delete;

  /// Lowest usable address and usable size (without the guard page).
  char *bottom() const { return bottom_; }
  size_t size() const { return size_; }

private:
  char *map_ = nullptr;
  size_t mapBytes_ = 0;
  char *bottom_ = nullptr;
  size_t size_ = 0;
};

/// A saved execution context: the stack pointer of a suspended fiber (or of
/// the scheduler while a fiber runs).
struct FiberContext {
  void *sp = nullptr;
  /// AddressSanitizer's fake stack of the suspended side, and the bounds of
  /// the stack that is switched to (only used under ASan).
  void *fakeStack = nullptr;
  const void *stackBottom = nullptr;
  size_t stackSize = 0;
};

/// Prepares `ctx` so that switching to it calls entry(arg) on `stack`.
/// entry must never return: it ends by switching away for good
/// (switchFiber with `exiting` set).
void makeFiber(FiberContext &ctx, const FiberStack &stack,
               void (*entry)(void *), void *arg);

/// Saves the current context into `from` and resumes `to`. `exiting`: the
/// current fiber never runs again (lets ASan drop its fake stack).
void switchFiber(FiberContext &from, FiberContext &to, bool exiting = false);

/// To be called first thing in a fiber's entry function: completes the
/// switch that started it (ASan bookkeeping) and records the scheduler's
/// stack in `scheduler`.
void fiberStarted(FiberContext &scheduler);

} // namespace folio::cuda_emu

#endif // FOLIO_CODEGEN_CUDA_EMULATION_FIBER_H
