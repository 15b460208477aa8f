//===- ThreadPool.h - One pool of kernel threads ----------------*- C++ -*-===//
//
// Kernels split their work with parallelFor. Two backends, one interface:
//  - With oneDNN (whose Debian build threads with libgomp), parallelFor runs
//    as an OpenMP parallel region, so Folio's kernels and oneDNN's matmuls
//    share one set of worker threads. Separate pools oversubscribe the
//    cores: libgomp's workers keep spinning for ~5 ms after each matmul
//    (its default GOMP_SPINCOUNT), exactly when the next Folio kernel wants
//    those cores (measured: 2-thread prefill attention 43-61 ms with two
//    pools against 29-31 ms with idle OpenMP workers asleep).
//    OMP_WAIT_POLICY=passive makes idle workers sleep at once.
//  - Otherwise, own worker threads that spin for a few tens of microseconds
//    after a job (the next kernel of a step usually follows at once) and
//    then sleep on a condition variable: the machines are shared, and a
//    spinning thread that loses its core stalls every step.
//
//===----------------------------------------------------------------------===//

#ifndef FOLIO_CODEGEN_CPU_THREADPOOL_H
#define FOLIO_CODEGEN_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace folio::cpu {

/// A fixed set of worker threads plus the calling thread.
class ThreadPool {
public:
  /// `numThreads` counts the caller: 1 means no workers (everything runs on
  /// the calling thread); 0 is treated as 1.
  explicit ThreadPool(unsigned numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that run a parallelFor, the caller included.
  unsigned numThreads() const { return count; }

  /// Calls `fn(begin, end)` on disjoint chunks of at most `grain` indices
  /// covering [0, n), on the workers and the caller, and returns when all
  /// are done. Chunk boundaries depend only on n and grain, never on the
  /// number of threads, so kernels that write each chunk's output from its
  /// own inputs give identical results for any pool size. A parallelFor
  /// issued from inside a chunk runs serially on that thread.
  template <typename Fn> void parallelFor(int64_t n, int64_t grain, Fn &&fn) {
    run(
        n, grain,
        [](void *ctx, int64_t b, int64_t e) {
          (*static_cast<Fn *>(ctx))(b, e);
        },
        const_cast<void *>(static_cast<const void *>(&fn)));
  }

  /// The process-wide pool: FOLIO_NUM_THREADS threads if set, else one per
  /// core this process may run on.
  static ThreadPool &global();

private:
  using ChunkFn = void (*)(void *, int64_t, int64_t);
  void run(int64_t n, int64_t grain, ChunkFn fn, void *ctx);
  void workerLoop();
  void runChunks();

  unsigned count = 1;
  std::vector<std::thread> workers; // empty with the OpenMP backend
  std::mutex submitMutex;           // one job at a time
  std::mutex mutex;
  std::condition_variable wakeCv;
  std::condition_variable doneCv;
  int sleepers = 0; // guarded by mutex
  bool stopping = false;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pendingWorkers{0};

  // The current job; written before generation is bumped.
  ChunkFn jobFn = nullptr;
  void *jobCtx = nullptr;
  int64_t jobN = 0;
  int64_t jobGrain = 1;
  int64_t jobChunks = 0;
  std::atomic<int64_t> nextChunk{0};
};

} // namespace folio::cpu

#endif // FOLIO_CODEGEN_CPU_THREADPOOL_H
