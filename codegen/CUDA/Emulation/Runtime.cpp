//===- Runtime.cpp - Grid scheduler of the CUDA host emulation ------------===//

#include "codegen/CUDA/Emulation/Runtime.h"

#include "codegen/CUDA/Emulation/Builtins.h"
#include "codegen/CUDA/Emulation/Fiber.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace folio::cuda_emu {
namespace {

// Virtual size: pages are committed only when touched (MAP_NORESERVE), and
// ASan's redzones make kernel frames several times larger.
constexpr size_t kStackBytes = 256 * 1024;
constexpr unsigned kMaxBlockThreads = 1024;

enum class State : uint8_t { Runnable, Barrier, Warp, Done };

struct Thread {
  FiberContext ctx;
  std::unique_ptr<FiberStack> stack;
  uint3 tid{};
  unsigned linear = 0;
  State state = State::Runnable;
  uint64_t waitGen = 0;
};

struct Warp {
  unsigned live = 0;      // lanes that have not exited
  unsigned arrived = 0;   // lanes waiting in the open round
  unsigned roundMask = 0; // the open round's mask
  uint64_t gen = 0;       // rounds completed
  unsigned char slots[2][32][16];
  unsigned took[2] = {0, 0}; // lanes that took part, per buffer
};

struct Worker {
  const LaunchConfig *config = nullptr;
  void (*body)(void *) = nullptr;
  void *arg = nullptr;
  FiberContext scheduler;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  Thread *current = nullptr;
  unsigned live = 0;
  // __syncthreads: threads arrived in the open round, predicates that
  // were true, and each completed round's result, double-buffered by
  // generation (a round cannot complete before every waiter of the
  // previous one has read its result).
  unsigned barArrived = 0, barTrue = 0;
  uint64_t barGen = 0;
  int barResult[2] = {0, 0};
  BarrierOp barOp = BarrierOp::Sync;
  std::vector<unsigned char> dynShared;
};

thread_local Worker *tWorker = nullptr;

Worker &worker() {
  if (!tWorker) {
    std::fprintf(stderr, "folio cuda emulation: a CUDA builtin was called "
                         "outside a kernel launched by launchGrid\n");
    std::abort();
  }
  return *tWorker;
}

[[noreturn]] void fail(const Worker &w, const char *what) {
  std::fprintf(stderr,
               "folio cuda emulation: %s in block (%u,%u,%u) of %s "
               "(grid %ux%ux%u, block %ux%ux%u)\n",
               what, blockIdx.x, blockIdx.y, blockIdx.z, w.config->kernelName,
               w.config->grid.x, w.config->grid.y, w.config->grid.z,
               w.config->block.x, w.config->block.y, w.config->block.z);
  std::fflush(stderr);
  std::abort();
}

void completeBarrier(Worker &w) {
  int result = w.barOp == BarrierOp::Count ? int(w.barTrue)
               : w.barOp == BarrierOp::And ? int(w.barTrue == w.barArrived)
               : w.barOp == BarrierOp::Or  ? int(w.barTrue > 0)
                                           : 0;
  w.barResult[w.barGen & 1] = result;
  ++w.barGen;
  w.barArrived = w.barTrue = 0;
  for (Thread &t : w.threads)
    if (t.state == State::Barrier)
      t.state = State::Runnable;
}

void completeWarpRound(Worker &w, unsigned warpIndex) {
  Warp &warp = w.warps[warpIndex];
  warp.took[warp.gen & 1] = warp.arrived;
  ++warp.gen;
  warp.arrived = 0;
  unsigned base = warpIndex * 32;
  for (unsigned lane = 0; lane < 32 && base + lane < w.threads.size(); ++lane)
    if (w.threads[base + lane].state == State::Warp)
      w.threads[base + lane].state = State::Runnable;
}

/// Completes a warp round if every live lane of its mask has arrived (also
/// after a lane exits: exited lanes are not waited for).
void maybeCompleteWarp(Worker &w, unsigned warpIndex) {
  Warp &warp = w.warps[warpIndex];
  unsigned needed = warp.roundMask & warp.live;
  if (warp.arrived && (warp.arrived & needed) == needed)
    completeWarpRound(w, warpIndex);
}

void block(Worker &w, Thread &t, State s) {
  t.state = s;
  switchFiber(t.ctx, w.scheduler);
}

void fiberEntry(void *p) {
  Worker &w = *tWorker;
  Thread &t = *static_cast<Thread *>(p);
  fiberStarted(w.scheduler);
  w.body(w.arg);
  t.state = State::Done;
  --w.live;
  if (w.barArrived && w.barArrived == w.live)
    completeBarrier(w);
  unsigned warpIndex = t.linear / 32;
  w.warps[warpIndex].live &= ~(1u << (t.linear % 32));
  maybeCompleteWarp(w, warpIndex);
  switchFiber(t.ctx, w.scheduler, /*exiting=*/true);
  __builtin_unreachable();
}

[[noreturn]] void deadlock(Worker &w) {
  unsigned inBarrier = 0, inWarp = 0;
  for (const Thread &t : w.threads)
    inBarrier += t.state == State::Barrier, inWarp += t.state == State::Warp;
  std::string detail;
  for (size_t i = 0; i < w.warps.size(); ++i) {
    const Warp &warp = w.warps[i];
    if (!warp.arrived)
      continue;
    char line[160];
    std::snprintf(line, sizeof line,
                  "; warp %zu: lanes 0x%08x wait with mask 0x%08x for lanes "
                  "0x%08x",
                  i, warp.arrived, warp.roundMask,
                  warp.roundMask & warp.live & ~warp.arrived);
    detail += line;
  }
  char msg[512];
  std::snprintf(msg, sizeof msg,
                "deadlock: no thread can run; %u threads wait in "
                "__syncthreads (%u arrived of %u live), %u in a warp "
                "collective%s",
                inBarrier, w.barArrived, w.live, inWarp, detail.c_str());
  fail(w, msg);
}

void runBlock(Worker &w, uint64_t linearBlock) {
  const LaunchConfig &c = *w.config;
  blockIdx.x = unsigned(linearBlock % c.grid.x);
  blockIdx.y = unsigned(linearBlock / c.grid.x % c.grid.y);
  blockIdx.z = unsigned(linearBlock / (uint64_t(c.grid.x) * c.grid.y));
  std::fill(w.dynShared.begin(), w.dynShared.end(), 0xff);
  unsigned n = unsigned(w.threads.size());
  for (Thread &t : w.threads) {
    makeFiber(t.ctx, *t.stack, &fiberEntry, &t);
    t.state = State::Runnable;
  }
  for (unsigned i = 0; i < w.warps.size(); ++i) {
    Warp &warp = w.warps[i];
    unsigned lanes = n - i * 32 < 32 ? n - i * 32 : 32;
    warp.live = lanes == 32 ? ~0u : (1u << lanes) - 1;
    warp.arrived = 0;
    warp.gen = 0;
  }
  w.live = n;
  w.barArrived = w.barTrue = 0;
  w.barGen = 0;
  std::vector<unsigned> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(c.scheduleSeed ^ (linearBlock * 0x9e3779b97f4a7c15ull));
  while (w.live > 0) {
    bool ran = false;
    if (c.scheduleSeed)
      std::shuffle(order.begin(), order.end(), rng);
    for (unsigned i : order) {
      Thread &t = w.threads[i];
      if (t.state != State::Runnable)
        continue;
      threadIdx = t.tid;
      w.current = &t;
      switchFiber(w.scheduler, t.ctx);
      ran = true;
    }
    if (!ran)
      deadlock(w);
  }
  w.current = nullptr;
}

void runWorker(const LaunchConfig &c, void (*body)(void *), void *arg,
               std::atomic<uint64_t> &next) {
  Worker w;
  w.config = &c;
  w.body = body;
  w.arg = arg;
  unsigned n = unsigned(c.block.count());
  w.threads.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    Thread &t = w.threads[i];
    t.stack = std::make_unique<FiberStack>(kStackBytes);
    t.linear = i;
    t.tid.x = i % c.block.x;
    t.tid.y = i / c.block.x % c.block.y;
    t.tid.z = i / (c.block.x * c.block.y);
  }
  w.warps.resize((n + 31) / 32);
  w.dynShared.resize(c.dynamicShared);
  blockDim = dim3(c.block.x, c.block.y, c.block.z);
  gridDim = dim3(c.grid.x, c.grid.y, c.grid.z);
  tWorker = &w;
  uint64_t total = c.grid.count();
  for (uint64_t b = next++; b < total; b = next++)
    runBlock(w, b);
  tWorker = nullptr;
}

} // namespace

void launchGrid(const LaunchConfig &c, void (*body)(void *), void *arg) {
  if (c.block.count() == 0 || c.block.count() > kMaxBlockThreads ||
      c.grid.count() == 0) {
    std::fprintf(stderr,
                 "folio cuda emulation: %s launched with grid %ux%ux%u and "
                 "block %ux%ux%u; a block holds 1 to %u threads and a grid "
                 "at least one block\n",
                 c.kernelName, c.grid.x, c.grid.y, c.grid.z, c.block.x,
                 c.block.y, c.block.z, kMaxBlockThreads);
    std::abort();
  }
  std::atomic<uint64_t> next{0};
  unsigned workers = c.workers ? c.workers : 1;
  std::vector<std::thread> others;
  for (unsigned i = 1; i < workers; ++i)
    others.emplace_back([&] { runWorker(c, body, arg, next); });
  runWorker(c, body, arg, next);
  for (std::thread &t : others)
    t.join();
}

int blockBarrier(BarrierOp op, int predicate) {
  Worker &w = worker();
  Thread &t = *w.current;
  if (w.barArrived == 0)
    w.barOp = op;
  ++w.barArrived;
  w.barTrue += predicate != 0;
  uint64_t gen = w.barGen;
  if (w.barArrived == w.live)
    completeBarrier(w);
  else
    block(w, t, State::Barrier);
  return w.barResult[gen & 1];
}

const unsigned char (*warpExchange(unsigned mask, const void *value,
                                   size_t bytes, unsigned &arrived))[16] {
  Worker &w = worker();
  Thread &t = *w.current;
  unsigned warpIndex = t.linear / 32, lane = t.linear % 32;
  Warp &warp = w.warps[warpIndex];
  char msg[256];
  if (!(mask & (1u << lane))) {
    std::snprintf(msg, sizeof msg,
                  "lane %u of warp %u calls a warp collective with mask "
                  "0x%08x, which does not contain the lane itself",
                  lane, warpIndex, mask);
    fail(w, msg);
  }
  if (warp.arrived == 0) {
    warp.roundMask = mask;
  } else if (mask != warp.roundMask) {
    std::snprintf(msg, sizeof msg,
                  "lane %u of warp %u calls a warp collective with mask "
                  "0x%08x while lanes 0x%08x of the same round used 0x%08x "
                  "(groups of one warp with different masks at the same time "
                  "are not emulated)",
                  lane, warpIndex, mask, warp.arrived, warp.roundMask);
    fail(w, msg);
  }
  uint64_t gen = warp.gen;
  std::memcpy(warp.slots[gen & 1][lane], value, bytes);
  warp.arrived |= 1u << lane;
  unsigned needed = warp.roundMask & warp.live;
  if ((warp.arrived & needed) == needed)
    completeWarpRound(w, warpIndex);
  else
    block(w, t, State::Warp);
  arrived = warp.took[gen & 1];
  return warp.slots[gen & 1];
}

unsigned laneId() { return worker().current->linear % 32; }

unsigned liveLanes() {
  Worker &w = worker();
  return w.warps[w.current->linear / 32].live;
}

void *dynamicShared() {
  Worker &w = worker();
  return w.dynShared.empty() ? nullptr : w.dynShared.data();
}

void trap(const char *message) {
  Worker &w = worker();
  char msg[256];
  std::snprintf(msg, sizeof msg, "thread (%u,%u,%u): %s", threadIdx.x,
                threadIdx.y, threadIdx.z, message);
  fail(w, msg);
}

} // namespace folio::cuda_emu
