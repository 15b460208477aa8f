//===- ThreadPoolTest.cpp - ThreadPool tests ------------------------------===//

#include "test/unittests/CPUKernels/TestUtil.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

using namespace folio::cpu;
using namespace folio::cpu::test;

namespace {

// Tests that every index is visited exactly once, for sizes around the grain.
TEST(ThreadPool, CoversRangeExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 7, 8, 9, 1000, 1001}) {
    for (int64_t grain : {1, 8, 100, 5000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallelFor(n, grain, [&](int64_t b, int64_t e) {
        EXPECT_LE(e - b, grain);
        for (int64_t i = b; i < e; ++i)
          hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

// Tests that chunk boundaries depend only on n and grain.
TEST(ThreadPool, ChunksIndependentOfThreadCount) {
  auto chunks = [](ThreadPool &pool) {
    std::vector<std::atomic<int64_t>> end(100);
    pool.parallelFor(100, 7,
                     [&](int64_t b, int64_t e) { end[size_t(b)].store(e); });
    std::vector<int64_t> r;
    for (auto &x : end)
      r.push_back(x.load());
    return r;
  };
  ThreadPool one(1), three(3);
  EXPECT_EQ(chunks(one), chunks(three));
}

// Tests that a parallelFor inside a chunk runs (serially) instead of
// deadlocking on the busy pool.
TEST(ThreadPool, NestedParallelForRuns) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  pool.parallelFor(10, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallelFor(10, 1, [&](int64_t b2, int64_t e2) {
        for (int64_t j = b2; j < e2; ++j)
          sum.fetch_add(i * 10 + j);
      });
  });
  EXPECT_EQ(sum.load(), 99 * 100 / 2);
}

// Tests many back-to-back jobs (workers alternate between spinning and
// sleeping) and a pause long enough for every worker to fall asleep.
TEST(ThreadPool, ManyJobsAndSleepingWorkers) {
  ThreadPool pool(4);
  int64_t total = 0;
  for (int job = 0; job < 2000; ++job) {
    std::atomic<int64_t> s{0};
    pool.parallelFor(64, 4, [&](int64_t b, int64_t e) { s.fetch_add(e - b); });
    total += s.load();
    if (job == 1000)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(total, 2000 * 64);
}

// Tests that guided chunks cover the range once, respect the alignment and
// the minimum grain (except the last chunk), and shrink as work drains.
TEST(ThreadPool, GuidedCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 4, 5, 63, 64, 65, 1000, 4099}) {
    for (int64_t minGrain : {1, 4, 16, 5000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      pool.parallelForGuided(n, minGrain, 4, [&](int64_t b, int64_t e) {
        {
          std::lock_guard<std::mutex> lock(mu);
          chunks.push_back({b, e});
        }
        for (int64_t i = b; i < e; ++i)
          hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
      for (auto [b, e] : chunks) {
        EXPECT_EQ(b % 4, 0) << "n=" << n;
        if (e != n) {
          EXPECT_GE(e - b, std::max<int64_t>(minGrain, 4)) << "n=" << n;
        }
      }
      if (n == 4099 && minGrain == 4) {
        std::sort(chunks.begin(), chunks.end());
        EXPECT_GE(chunks.front().second - chunks.front().first, 4099 / 6);
        EXPECT_LT(chunks.back().second - chunks.back().first, 4099 / 6);
      }
    }
  }
}

// Tests that a job finishes while no worker can join it (as when the other
// cores are taken by other processes): the caller never waits for a worker
// that has not claimed a chunk. A pool that waits for every worker to check
// in would hang here (ctest's timeout).
TEST(ThreadPool, CallerFinishesWithoutWorkers) {
  ThreadPool pool(4);
  pool.setWorkersPausedForTesting(true);
  for (int job = 0; job < 200; ++job) {
    std::atomic<int64_t> covered{0};
    pool.parallelFor(1000, 10,
                     [&](int64_t b, int64_t e) { covered.fetch_add(e - b); });
    ASSERT_EQ(covered.load(), 1000);
    std::atomic<int64_t> guided{0};
    pool.parallelForGuided(
        1000, 8, 4, [&](int64_t b, int64_t e) { guided.fetch_add(e - b); });
    ASSERT_EQ(guided.load(), 1000);
  }
  // Released workers wake into closed (or newer) jobs and must not run a
  // stale one; later jobs still complete with them.
  pool.setWorkersPausedForTesting(false);
  for (int job = 0; job < 200; ++job) {
    std::atomic<int64_t> covered{0};
    pool.parallelFor(1000, 10,
                     [&](int64_t b, int64_t e) { covered.fetch_add(e - b); });
    ASSERT_EQ(covered.load(), 1000);
  }
}

// Tests that an exception thrown in a chunk (on a worker or on the caller,
// whichever runs chunk 7) reaches the caller once the job has ended, and
// leaves the pool usable: later jobs complete, nested calls still work.
TEST(ThreadPool, ExceptionInAChunkReachesTheCaller) {
  ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    EXPECT_THROW(pool.parallelFor(1000, 1,
                                  [&](int64_t b, int64_t) {
                                    ran.fetch_add(1);
                                    if (b == 7)
                                      throw std::runtime_error("chunk 7");
                                  }),
                 std::runtime_error);
    EXPECT_GE(ran.load(), 1); // how many ran after the throw is timing
    std::atomic<int64_t> covered{0};
    pool.parallelFor(1000, 10,
                     [&](int64_t b, int64_t e) { covered.fetch_add(e - b); });
    EXPECT_EQ(covered.load(), 1000);
  }
  // Nested calls still fan out after a throw on the caller's thread.
  std::atomic<int> nestedSerial{0};
  pool.parallelFor(4, 1, [&](int64_t, int64_t) {
    pool.parallelFor(2, 1,
                     [&](int64_t, int64_t) { nestedSerial.fetch_add(1); });
  });
  EXPECT_EQ(nestedSerial.load(), 8);
}

TEST(ThreadPool, ZeroThreadsMeansCallerOnly) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.numThreads(), 1u);
  int64_t covered = 0;
  pool.parallelFor(10, 3, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered, 10);
  EXPECT_GE(ThreadPool::global().numThreads(), 1u);
}

// Tests that every user asking for a size shares one pool of that size,
// and that jobs from two threads on a shared pool both complete.
TEST(ThreadPool, SharedPoolsBySize) {
  ThreadPool &two = ThreadPool::shared(2);
  EXPECT_EQ(&two, &ThreadPool::shared(2));
  EXPECT_EQ(two.numThreads(), 2u);
  ThreadPool &three = ThreadPool::shared(3);
  EXPECT_NE(&two, &three);
  EXPECT_EQ(three.numThreads(), 3u);
  EXPECT_EQ(&ThreadPool::shared(0), &ThreadPool::shared(1));
  EXPECT_EQ(ThreadPool::shared(0).numThreads(), 1u);
  std::atomic<int64_t> covered{0};
  auto work = [&] {
    for (int i = 0; i < 200; ++i)
      two.parallelFor(64, 4,
                      [&](int64_t b, int64_t e) { covered.fetch_add(e - b); });
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(covered.load(), 2 * 200 * 64);
}

} // namespace
