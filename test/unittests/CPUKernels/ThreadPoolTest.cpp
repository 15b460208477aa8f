//===- ThreadPoolTest.cpp - ThreadPool tests ------------------------------===//

#include "TestUtil.h"

#include <atomic>

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

TEST(ThreadPool, ZeroThreadsMeansCallerOnly) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.numThreads(), 1u);
  int64_t covered = 0;
  pool.parallelFor(10, 3, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered, 10);
  EXPECT_GE(ThreadPool::global().numThreads(), 1u);
}

} // namespace
