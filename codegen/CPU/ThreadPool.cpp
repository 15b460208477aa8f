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
#ifdef FOLIO_THREADPOOL_OPENMP
  return; // OpenMP's threads do the work
#endif
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

void ThreadPool::runChunks() {
  bool wasInside = insideChunk;
  insideChunk = true;
  for (;;) {
    int64_t c = nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= jobChunks)
      break;
    int64_t begin = c * jobGrain;
    int64_t end = begin + jobGrain < jobN ? begin + jobGrain : jobN;
    jobFn(jobCtx, begin, end);
  }
  insideChunk = wasInside;
}

void ThreadPool::run(int64_t n, int64_t grain, ChunkFn fn, void *ctx) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  if (count == 1 || chunks == 1 || insideChunk) {
    bool wasInside = insideChunk;
    insideChunk = true;
    for (int64_t b = 0; b < n; b += grain)
      fn(ctx, b, b + grain < n ? b + grain : n);
    insideChunk = wasInside;
    return;
  }

#ifdef FOLIO_THREADPOOL_OPENMP
  // Chunks are handed out dynamically, as with own workers; each call gets
  // its own team, so no job lock is needed.
  std::atomic<int64_t> next{0};
  int team = int(chunks < int64_t(count) ? chunks : int64_t(count));
#pragma omp parallel num_threads(team)
  {
    bool wasInside = insideChunk;
    insideChunk = true;
    for (;;) {
      int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks)
        break;
      int64_t begin = c * grain;
      fn(ctx, begin, begin + grain < n ? begin + grain : n);
    }
    insideChunk = wasInside;
  }
  return;
#endif
  std::lock_guard<std::mutex> submit(submitMutex);
  jobFn = fn;
  jobCtx = ctx;
  jobN = n;
  jobGrain = grain;
  jobChunks = chunks;
  nextChunk.store(0, std::memory_order_relaxed);
  pendingWorkers.store(int(workers.size()), std::memory_order_relaxed);
  bool wake;
  {
    // Bumping under the mutex means a worker that is about to sleep either
    // sees the new generation or is already waiting when we notify.
    std::lock_guard<std::mutex> lock(mutex);
    generation.fetch_add(1, std::memory_order_release);
    wake = sleepers > 0;
  }
  if (wake)
    wakeCv.notify_all();

  runChunks();

  auto allDone = [this] {
    return pendingWorkers.load(std::memory_order_acquire) == 0;
  };
  if (!spinUntil(allDone)) {
    std::unique_lock<std::mutex> lock(mutex);
    doneCv.wait(lock, allDone);
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
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping)
        return;
    }
    runChunks();
    if (pendingWorkers.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex);
      doneCv.notify_all();
    }
  }
}

} // namespace folio::cpu
