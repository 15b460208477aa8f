//===- PlanMapping.cpp - Mapped plan files and their SIGBUS guard ---------===//

#include "runtime/Plan/PlanMapping.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <signal.h>
#include <unistd.h>

namespace folio::plan {
namespace {

enum SlotState : int { Free = 0, Writing = 1, Live = 2 };

struct Slot {
  std::atomic<int> state{Free};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  char path[kMaxPlanMappingPath] = {};
};

Slot slots[kMaxPlanMappings];
struct sigaction previousAction;
std::once_flag installOnce;

// Everything below up to installHandler runs in the signal handler: only
// async-signal-safe calls (write, _exit, sigaction, raise), no allocation.

const char *lookup(uintptr_t addr) {
  for (Slot &s : slots) {
    if (s.state.load(std::memory_order_acquire) != Live)
      continue;
    if (addr >= s.begin.load(std::memory_order_relaxed) &&
        addr < s.end.load(std::memory_order_relaxed))
      return s.path;
  }
  return nullptr;
}

void onSigbus(int sig, siginfo_t *info, void *context) {
  if (const char *path = lookup(uintptr_t(info->si_addr))) {
    static const char kHead[] = "folio: error: the plan file '";
    static const char kTail[] = "' changed or was truncated while in use "
                                "(its weights are mapped); reload it\n";
    char buf[sizeof(kHead) + kMaxPlanMappingPath + sizeof(kTail)];
    size_t n = 0;
    auto append = [&](const char *s) {
      while (*s && n < sizeof(buf))
        buf[n++] = *s++;
    };
    append(kHead);
    append(path);
    append(kTail);
    for (size_t done = 0; done < n;) {
      ssize_t w = ::write(STDERR_FILENO, buf + done, n - done);
      if (w <= 0)
        break;
      done += size_t(w);
    }
    ::_exit(1);
  }
  // Not a plan's fault: whoever handled SIGBUS before us, else the default
  // action (restored, then raised; a hardware fault would also re-fault on
  // return).
  if ((previousAction.sa_flags & SA_SIGINFO) && previousAction.sa_sigaction) {
    previousAction.sa_sigaction(sig, info, context);
    return;
  }
  if (!(previousAction.sa_flags & SA_SIGINFO) &&
      previousAction.sa_handler != SIG_DFL &&
      previousAction.sa_handler != SIG_IGN && previousAction.sa_handler) {
    previousAction.sa_handler(sig);
    return;
  }
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGBUS, &dfl, nullptr);
  ::raise(SIGBUS);
}

void installHandler() {
  struct sigaction sa = {};
  sa.sa_sigaction = onSigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &previousAction);
}

} // namespace

int registerPlanMapping(const void *base, size_t size, const char *path) {
  std::call_once(installOnce, installHandler);
  for (int i = 0; i < kMaxPlanMappings; ++i) {
    Slot &s = slots[i];
    int expected = Free;
    if (!s.state.compare_exchange_strong(expected, Writing,
                                         std::memory_order_acquire))
      continue;
    uintptr_t b = uintptr_t(base);
    s.begin.store(b, std::memory_order_relaxed);
    s.end.store(b + size, std::memory_order_relaxed);
    size_t n = 0;
    for (; path && path[n] && n + 1 < kMaxPlanMappingPath; ++n)
      s.path[n] = path[n];
    s.path[n] = '\0';
    s.state.store(Live, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregisterPlanMapping(int slot) {
  if (slot < 0 || slot >= kMaxPlanMappings)
    return;
  slots[slot].state.store(Free, std::memory_order_release);
}

const char *planMappingAt(const void *addr) { return lookup(uintptr_t(addr)); }

} // namespace folio::plan
