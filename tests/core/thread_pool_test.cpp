#include "core/exec/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace devmap {
namespace {

TEST(ThreadPool, CoversTheRangeOnceWithDisjointChunks) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, ChunksDependOnlyOnSizeAndPoolSize) {
  ThreadPool pool(3);
  auto chunks = [&] {
    std::vector<std::pair<int64_t, int64_t>> c(3, {-1, -1});
    std::atomic<int> k{0};
    std::mutex mu;
    pool.parallel_for(10, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lock(mu);
      c[static_cast<size_t>(k++)] = {b, e};
    });
    std::sort(c.begin(), c.end());
    return c;
  };
  auto first = chunks();
  EXPECT_EQ(first, chunks());
  EXPECT_EQ(first, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 7}, {7, 10}}));
}

TEST(ThreadPool, SurvivesManyRounds) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 2000; ++round) pool.parallel_for(4, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 8000);
}

// Loops further apart than a waiting thread spins (ThreadPool::kSpin) find
// the pool's threads asleep on the condition variable, and wake them.
TEST(ThreadPool, WakesThreadsThatSleptPastTheSpin) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(4 * ThreadPool::kSpin);
    pool.parallel_for(300, [&](int64_t b, int64_t e) { sum += e - b; });
  }
  EXPECT_EQ(sum.load(), 1500);
}

}  // namespace
}  // namespace devmap
