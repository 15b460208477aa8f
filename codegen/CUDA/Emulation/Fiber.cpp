//===- Fiber.cpp - x86-64 context switch for the CUDA host emulation ------===//

#include "codegen/CUDA/Emulation/Fiber.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FOLIO_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FOLIO_EMU_ASAN 1
#endif
#endif

#ifdef FOLIO_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the CUDA host emulation's context switch is written for x86-64 only"
#endif

extern "C" {
void folio_emu_switch(void **saveSp, void *loadSp);
void folio_emu_trampoline();
}

// System V x86-64: rbx, rbp, r12-r15 are callee-saved, as are MXCSR's
// control bits and the x87 control word; everything else the caller of
// folio_emu_switch already assumes clobbered. A new fiber's frame holds the
// entry function in r13 and its argument in r12, popped by the trampoline.
asm(R"(
  .text
  .globl folio_emu_switch
  .hidden folio_emu_switch
  .type folio_emu_switch,@function
  .p2align 4
folio_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size folio_emu_switch,.-folio_emu_switch

  .globl folio_emu_trampoline
  .hidden folio_emu_trampoline
  .type folio_emu_trampoline,@function
  .p2align 4
folio_emu_trampoline:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size folio_emu_trampoline,.-folio_emu_trampoline
)");

namespace folio::cuda_emu {

FiberStack::FiberStack(size_t bytes) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_ = (bytes + page - 1) / page * page;
  mapBytes_ = size_ + page;
  void *p = mmap(nullptr, mapBytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr,
                 "folio cuda emulation: cannot map a %zu-byte fiber stack\n",
                 mapBytes_);
    std::abort();
  }
  map_ = static_cast<char *>(p);
  mprotect(map_, page, PROT_NONE); // the stack grows down onto this page
  bottom_ = map_ + page;
}

FiberStack::~FiberStack() { munmap(map_, mapBytes_); }

void makeFiber(FiberContext &ctx, const FiberStack &stack,
               void (*entry)(void *), void *arg) {
#ifdef FOLIO_EMU_ASAN
  // A fiber that ended by switching away leaves its frames' redzones
  // poisoned; the next fiber on this stack must not trip over them.
  __asan_unpoison_memory_region(stack.bottom(), stack.size());
#endif
  uintptr_t top = reinterpret_cast<uintptr_t>(stack.bottom() + stack.size());
  top &= ~uintptr_t(15);
  // After `ret` pops the trampoline, rsp = top - 16 is 16-byte aligned, as
  // the trampoline's call requires.
  uint64_t *frame = reinterpret_cast<uint64_t *>(top - 16 - 8 * 8);
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  frame[0] = uint64_t(mxcsr) | (uint64_t(fpucw) << 32);
  frame[1] = 0;                                 // r15
  frame[2] = 0;                                 // r14
  frame[3] = reinterpret_cast<uint64_t>(entry); // r13
  frame[4] = reinterpret_cast<uint64_t>(arg);   // r12
  frame[5] = 0;                                 // rbx
  frame[6] = 0;                                 // rbp
  frame[7] = reinterpret_cast<uint64_t>(&folio_emu_trampoline);
  ctx.sp = frame;
  ctx.fakeStack = nullptr;
  ctx.stackBottom = stack.bottom();
  ctx.stackSize = stack.size();
}

void switchFiber(FiberContext &from, FiberContext &to, bool exiting) {
#ifdef FOLIO_EMU_ASAN
  __sanitizer_start_switch_fiber(exiting ? nullptr : &from.fakeStack,
                                 to.stackBottom, to.stackSize);
#else
  (void)exiting;
#endif
  folio_emu_switch(&from.sp, to.sp);
#ifdef FOLIO_EMU_ASAN
  __sanitizer_finish_switch_fiber(from.fakeStack, nullptr, nullptr);
#endif
}

void fiberStarted(FiberContext &scheduler) {
#ifdef FOLIO_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &scheduler.stackBottom,
                                  &scheduler.stackSize);
#else
  (void)scheduler;
#endif
}

} // namespace folio::cuda_emu
