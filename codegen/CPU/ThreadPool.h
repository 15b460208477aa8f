//===- ThreadPool.h - One pool of kernel threads ----------------*- C++ -*-===//
//
// Kernels split their work with parallelFor: chunks handed out through one
// shared counter to the calling thread and the pool's workers.
//
// The machines are shared, so a worker may not have a core when a job
// starts. The caller therefore never waits for a worker that has not begun
// a chunk: a worker joins a job only while it is open, the caller closes it
// once every chunk is claimed, and then waits only for chunks already being
// run. A worker that wakes late finds the job closed and goes back to wait.
// (A fork-join pool in which every worker must check in, as OpenMP's
// implicit barrier or a "pending workers" count, turns each job into a wait
// for the scheduler to give that worker a core: measured with another
// process busy on the second vCPU, 2-thread decode GEMVs ran at 0.3 GB/s,
// 50x slower than one thread.)
//
// Idle workers poll for a few tens of microseconds after a job (the next
// kernel of a step usually follows at once) and then sleep on a condition
// variable, so an idle pool holds no core.
//
// oneDNN's matmuls run on this pool too: DnnlMatmul splits a matmul into
// column slices and runs each slice single-threaded on a pool thread, so
// libgomp never starts a team of its own (whose workers would spin for
// milliseconds after every matmul, on the cores this pool wants).
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_THREADPOOL_H
#define FOLIO_CODEGEN_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace folio::cpu {

/// A kernel call of fewer multiply-adds than this runs on the calling
/// thread: that is about a microsecond on one core, and handing part of it
/// to a worker and joining it costs about as much. (A draft model of
/// hidden size 64 makes such calls in its MLPs and short-context
/// attention: its gated MLPs took 6-9 us per 2-thread decode step split
/// over the pool, 4 us on the calling thread.)
constexpr int64_t kSerialMacs = int64_t(32) << 10;

/// A fixed set of worker threads plus the calling thread.
class ThreadPool {
public:
  /// `numThreads` counts the caller: 1 means no workers (everything runs on
  /// the calling thread); 0 is treated as 1.
  explicit ThreadPool(unsigned numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that may run a parallelFor, the caller included.
  unsigned numThreads() const { return count; }

  /// Calls `fn(begin, end)` on disjoint chunks of at most `grain` indices
  /// covering [0, n), on the workers and the caller, and returns when all
  /// are done. Chunk boundaries depend only on n and grain, never on the
  /// number of threads, so kernels that write each chunk's output from its
  /// own inputs give identical results for any pool size. A parallelFor
  /// issued from inside a chunk runs serially on that thread. Calls from
  /// several threads at once are serialised. If a chunk throws, no further
  /// chunk starts, the job ends as usual and the first exception is
  /// rethrown to the caller.
  template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
    run(n, grain, /*align=*/1, /*guided=*/false, &call<Fn>,
        const_cast<void *>(static_cast<const void *>(&fn)));
  }

  /// Like parallelFor, but chunk sizes shrink as the work drains (guided
  /// scheduling): each grab takes about remaining / (2 * threads) indices,
  /// never fewer than `minGrain`, rounded up to a multiple of `align`. For
  /// kernels that stream one long buffer (the GEMV): a few large chunks
  /// keep each thread's prefetchers on one contiguous run, the small tail
  /// chunks even out a thread that lost its core. Chunk boundaries depend on
  /// timing, so only kernels whose outputs do not depend on how the range is
  /// split may use it.
  template <typename Fn>
  void parallelForGuided(int64_t n, int64_t minGrain, int64_t align, Fn &&fn) {
    run(n, minGrain, align, /*guided=*/true, &call<Fn>,
        const_cast<void *>(static_cast<const void *>(&fn)));
  }

  /// Testing only: while paused, workers that see a new job wait before
  /// joining it, as a worker without a core would; jobs must still finish,
  /// on the caller alone.
  void setWorkersPausedForTesting(bool paused);

  /// The process-wide pool: FOLIO_NUM_THREADS threads if set, else one per
  /// core this process may run on.
  static ThreadPool &global();

  /// The process-wide pool of `numThreads` threads (0 is treated as 1),
  /// created on first use. Every user asking for the same size shares it:
  /// two pools on the same cores (two executors of one process run one
  /// after the other, as folio-bench's engines per configuration) would
  /// each leave a worker polling for the next job while the other pool's
  /// threads need the core.
  static ThreadPool &shared(unsigned numThreads);

private:
  using ChunkFn = void (*)(void *, int64_t, int64_t);
  template <typename Fn> static void call(void *ctx, int64_t b, int64_t e) {
    (*static_cast<Fn *>(ctx))(b, e);
  }
  void run(int64_t n, int64_t grain, int64_t align, bool guided, ChunkFn fn,
           void *ctx);
  void workerLoop();
  void runChunks();
  bool grab(int64_t &begin, int64_t &end);

  unsigned count = 1;
  std::vector<std::thread> workers;
  std::mutex submitMutex; // one job at a time
  std::mutex mutex;
  std::condition_variable wakeCv;
  std::condition_variable doneCv;
  int sleepers = 0; // guarded by mutex
  std::atomic<bool> stopping{false};
  std::atomic<bool> paused{false};
  /// Set (under mutex) while the caller sleeps waiting for joined workers.
  std::atomic<bool> callerSleeping{false};
  std::atomic<uint64_t> generation{0};
  /// Who may join and who has: the open job's tag (its generation, low 48
  /// bits; 0 once closed) above the count of workers that joined it (low
  /// 16 bits). One word, so a worker joins only with a compare-and-swap
  /// against the open tag, and a worker that wakes late never counts.
  std::atomic<uint64_t> joinState{0};
  /// The first exception a chunk threw; no chunk is handed out after it.
  std::exception_ptr jobError; // guarded by mutex
  std::atomic<bool> jobFailed{false};

  // The current job; written before generation is bumped.
  ChunkFn jobFn = nullptr;
  void *jobCtx = nullptr;
  int64_t jobN = 0;
  int64_t jobGrain = 1; // the minimum grain when guided
  int64_t jobAlign = 1;
  bool jobGuided = false;
  std::atomic<int64_t> next{0}; // next chunk, or next index when guided
};

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_THREADPOOL_H
