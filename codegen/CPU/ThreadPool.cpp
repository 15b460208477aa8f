//===- ThreadPool.cpp - One pool of kernel threads ------------------------===//

#include "codegen/CPU/ThreadPool.h"

#include <chrono>
#include <cstdlib>
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace folio::cpu {

namespace {

/// How long an idle worker polls before sleeping. Long enough to bridge the
/// gap between two kernels of one step, short enough not to hold a core.
constexpr std::chrono::microseconds kSpinTime(50);

thread_local bool insideChunk = false;

inline void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

unsigned defaultThreadCount() {
  if (const char *env = std::getenv("FOLIO_NUM_THREADS")) {
    long n = std::strtol(env, nullptr, 10);
    if (n > 0)
      return unsigned(n);
  }
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return unsigned(CPU_COUNT(&set));
#endif
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

/// Polls `done` for kSpinTime; true if it became true.
template <typename Pred> bool spinUntil(Pred done) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (unsigned i = 1;; ++i) {
    if (done())
      return true;
    cpuRelax();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() > deadline)
      return done();
  }
}

} // namespace

ThreadPool::ThreadPool(unsigned numThreads) {
  if (numThreads == 0)
    numThreads = 1;
  count = numThreads;
  workers.reserve(numThreads - 1);
  for (unsigned i = 1; i < numThreads; ++i)
    workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    generation.fetch_add(1, std::memory_order_release);
  }
  wakeCv.notify_all();
  for (std::thread &t : workers)
    t.join();
}

ThreadPool &ThreadPool::global() {
  static ThreadPool pool(defaultThreadCount());
  return pool;
}

void ThreadPool::setWorkersPausedForTesting(bool p) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    paused = p;
  }
  wakeCv.notify_all();
}

bool ThreadPool::grab(int64_t &begin, int64_t &end) {
  if (!jobGuided) {
    int64_t c = next.fetch_add(1, std::memory_order_relaxed);
    begin = c * jobGrain;
    if (begin >= jobN)
      return false;
    end = begin + jobGrain < jobN ? begin + jobGrain : jobN;
    return true;
  }
  int64_t cur = next.load(std::memory_order_relaxed);
  for (;;) {
    if (cur >= jobN)
      return false;
    int64_t size = (jobN - cur) / (2 * int64_t(count));
    if (size < jobGrain)
      size = jobGrain;
    size = (size + jobAlign - 1) / jobAlign * jobAlign;
    int64_t stop = cur + size < jobN ? cur + size : jobN;
    if (next.compare_exchange_weak(cur, stop, std::memory_order_relaxed)) {
      begin = cur;
      end = stop;
      return true;
    }
  }
}

void ThreadPool::runChunks() {
  bool wasInside = insideChunk;
  insideChunk = true;
  int64_t b, e;
  while (grab(b, e))
    jobFn(jobCtx, b, e);
  insideChunk = wasInside;
}

void ThreadPool::run(int64_t n, int64_t grain, int64_t align, bool guided,
                     ChunkFn fn, void *ctx) {
  if (n <= 0)
    return;
  if (align < 1)
    align = 1;
  if (grain < align)
    grain = align;
  grain = (grain + align - 1) / align * align;
  if (count == 1 || n <= grain || insideChunk) {
    bool wasInside = insideChunk;
    insideChunk = true;
    if (guided)
      fn(ctx, 0, n);
    else
      for (int64_t b = 0; b < n; b += grain)
        fn(ctx, b, b + grain < n ? b + grain : n);
    insideChunk = wasInside;
    return;
  }

  std::lock_guard<std::mutex> submit(submitMutex);
  jobFn = fn;
  jobCtx = ctx;
  jobN = n;
  jobGrain = grain;
  jobAlign = align;
  jobGuided = guided;
  next.store(0, std::memory_order_relaxed);
  bool wake;
  uint64_t gen;
  {
    // Bumping under the mutex means a worker that is about to sleep either
    // sees the new generation or is already waiting when we notify.
    std::lock_guard<std::mutex> lock(mutex);
    gen = generation.fetch_add(1, std::memory_order_release) + 1;
    openGeneration.store(gen, std::memory_order_seq_cst);
    wake = sleepers > 0;
  }
  if (wake)
    wakeCv.notify_all();

  runChunks();

  // Every chunk is claimed. Close the job, then wait for the workers that
  // joined it. The close and a joining worker's increment are both
  // sequentially consistent: either the worker's increment comes first and
  // we see it here, or it sees the job closed and never touches it.
  openGeneration.store(0, std::memory_order_seq_cst);
  auto allLeft = [this] { return inside.load(std::memory_order_seq_cst) == 0; };
  if (!spinUntil(allLeft)) {
    std::unique_lock<std::mutex> lock(mutex);
    doneCv.wait(lock, allLeft);
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto newJob = [&] {
      return generation.load(std::memory_order_acquire) != seen;
    };
    if (!spinUntil(newJob)) {
      std::unique_lock<std::mutex> lock(mutex);
      ++sleepers;
      wakeCv.wait(lock, newJob);
      --sleepers;
    }
    seen = generation.load(std::memory_order_acquire);
    {
      std::unique_lock<std::mutex> lock(mutex);
      wakeCv.wait(lock, [&] { return !paused || stopping; });
      if (stopping)
        return;
    }
    inside.fetch_add(1, std::memory_order_seq_cst);
    if (openGeneration.load(std::memory_order_seq_cst) == seen)
      runChunks();
    if (inside.fetch_sub(1, std::memory_order_seq_cst) == 1) {
      std::lock_guard<std::mutex> lock(mutex);
      doneCv.notify_all();
    }
  }
}

} // namespace folio::cpu
