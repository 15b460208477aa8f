//===- ThreadPool.cpp - One pool of kernel threads ------------------------===//

#include "codegen/CPU/ThreadPool.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
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

/// Marks the thread as running a chunk for its scope (exceptions included).
struct InsideChunk {
  bool was = insideChunk;
  InsideChunk() { insideChunk = true; }
  ~InsideChunk() { insideChunk = was; }
};

constexpr uint64_t kCountBits = 16;
constexpr uint64_t kCountMask = (uint64_t(1) << kCountBits) - 1;
/// The joinState tag of a generation: its low 48 bits (never 0 once a job
/// has been submitted; 2^48 jobs is out of reach).
inline uint64_t tagOf(uint64_t gen) { return gen & ((uint64_t(1) << 48) - 1); }

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
    stopping.store(true, std::memory_order_release);
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

ThreadPool &ThreadPool::shared(unsigned numThreads) {
  static std::mutex poolsMutex;
  static std::map<unsigned, std::unique_ptr<ThreadPool>> pools;
  unsigned n = numThreads ? numThreads : 1;
  std::lock_guard<std::mutex> lock(poolsMutex);
  std::unique_ptr<ThreadPool> &pool = pools[n];
  if (!pool)
    pool = std::make_unique<ThreadPool>(n);
  return *pool;
}

void ThreadPool::setWorkersPausedForTesting(bool p) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    paused.store(p, std::memory_order_release);
  }
  wakeCv.notify_all();
}

bool ThreadPool::grab(int64_t &begin, int64_t &end) {
  if (jobFailed.load(std::memory_order_relaxed))
    return false;
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
  InsideChunk guard;
  try {
    int64_t b, e;
    while (grab(b, e))
      jobFn(jobCtx, b, e);
  } catch (...) {
    // Stop handing out chunks; the caller rethrows after the join.
    std::lock_guard<std::mutex> lock(mutex);
    if (!jobError)
      jobError = std::current_exception();
    jobFailed.store(true, std::memory_order_relaxed);
  }
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
    InsideChunk guard;
    if (guided)
      fn(ctx, 0, n);
    else
      for (int64_t b = 0; b < n; b += grain)
        fn(ctx, b, b + grain < n ? b + grain : n);
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
  jobFailed.store(false, std::memory_order_relaxed);
  bool wake;
  {
    // Bumping under the mutex means a worker that is about to sleep either
    // sees the new generation or is already waiting when we notify. The
    // count is 0 here: the previous job waited for its workers to leave.
    // The job opens before the generation moves: a worker that sees the
    // new generation (acquire) then sees it open.
    std::lock_guard<std::mutex> lock(mutex);
    uint64_t gen = generation.load(std::memory_order_relaxed) + 1;
    joinState.store(tagOf(gen) << kCountBits, std::memory_order_seq_cst);
    generation.store(gen, std::memory_order_release);
    wake = sleepers > 0;
  }
  if (wake)
    wakeCv.notify_all();

  runChunks();

  // Every chunk is claimed. Close the job (clear the tag, keep the count),
  // then wait only for the workers that joined it.
  joinState.fetch_and(kCountMask, std::memory_order_seq_cst);
  auto allLeft = [this] {
    return (joinState.load(std::memory_order_seq_cst) & kCountMask) == 0;
  };
  if (!spinUntil(allLeft)) {
    std::unique_lock<std::mutex> lock(mutex);
    // Sequentially consistent against the leaving worker's decrement and
    // load: either we see the count at 0 or it sees us asleep and notifies.
    callerSleeping.store(true, std::memory_order_seq_cst);
    doneCv.wait(lock, allLeft);
    callerSleeping.store(false, std::memory_order_relaxed);
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex);
    std::swap(error, jobError);
  }
  if (error)
    std::rethrow_exception(error);
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
    if (paused.load(std::memory_order_acquire)) {
      std::unique_lock<std::mutex> lock(mutex);
      wakeCv.wait(lock, [&] {
        return !paused.load(std::memory_order_relaxed) ||
               stopping.load(std::memory_order_relaxed);
      });
    }
    if (stopping.load(std::memory_order_acquire))
      return;
    // Join only while this generation's job is open.
    uint64_t tag = tagOf(seen) << kCountBits;
    uint64_t state = joinState.load(std::memory_order_seq_cst);
    bool joined = false;
    while ((state & ~kCountMask) == tag) {
      if (joinState.compare_exchange_weak(state, state + 1,
                                          std::memory_order_seq_cst)) {
        joined = true;
        break;
      }
    }
    if (!joined)
      continue; // closed already, or a newer job: look again
    runChunks();
    uint64_t after = joinState.fetch_sub(1, std::memory_order_seq_cst) - 1;
    if ((after & kCountMask) == 0 &&
        callerSleeping.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mutex);
      doneCv.notify_all();
    }
  }
}

} // namespace folio::cpu
