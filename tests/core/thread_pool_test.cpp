#include "core/exec/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

// kChunksPerThread chunks a thread, their sizes differing by at most one,
// the same on every call whichever thread takes which.
TEST(ThreadPool, ChunksDependOnlyOnSizeAndPoolSize) {
  ThreadPool pool(3);
  auto chunks = [&](int64_t n) {
    std::vector<std::pair<int64_t, int64_t>> c;
    std::mutex mu;
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lock(mu);
      c.emplace_back(b, e);
    });
    std::sort(c.begin(), c.end());
    return c;
  };
  static_assert(ThreadPool::kChunksPerThread == 4, "the expected chunks below are 3 threads x 4");
  const auto first = chunks(27);
  EXPECT_EQ(first, chunks(27));
  EXPECT_EQ(first, (std::vector<std::pair<int64_t, int64_t>>{{0, 3},
                                                             {3, 6},
                                                             {6, 9},
                                                             {9, 11},
                                                             {11, 13},
                                                             {13, 15},
                                                             {15, 17},
                                                             {17, 19},
                                                             {19, 21},
                                                             {21, 23},
                                                             {23, 25},
                                                             {25, 27}}));
  // Fewer indices than chunks: one index each.
  EXPECT_EQ(chunks(5), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}));
}

// Whether ready() held within 10 s (a thread not run for that long fails the test).
template <class Ready>
bool within_ten_seconds(const Ready& ready) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// A thread held up inside a chunk (as by a core busy with another process)
// leaves the loop's other chunks to the rest: here the pool thread's first
// chunk waits until every other chunk is done, which only the caller can
// do while it waits (and the caller's first chunk waits until the pool
// thread has a chunk, so that both take part).
TEST(ThreadPool, AHeldUpThreadLeavesTheOtherChunksToTheRest) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> hits(8);
  std::atomic<int> done{0};
  std::atomic<bool> worker_started{false}, caller_started{false}, timed_out{false};
  pool.parallel_for(8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    if (std::this_thread::get_id() != caller) {
      if (!worker_started.exchange(true) && !within_ten_seconds([&] { return done.load() == 7; })) timed_out = true;
    } else if (!caller_started.exchange(true) && !within_ten_seconds([&] { return worker_started.load(); })) {
      timed_out = true;
    }
    ++done;
  });
  EXPECT_FALSE(timed_out.load()) << "a thread waited for chunks that only it could run";
  EXPECT_EQ(done.load(), 8);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
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
