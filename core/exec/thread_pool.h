// ThreadPool: a fixed set of threads that split a loop into contiguous
// chunks. Contract: parallel_for(n, fn) calls fn(begin, end) on disjoint
// ranges covering [0, n), chunk boundaries depend only on n and the pool
// size, and returns when all are done. A loop is cut into up to
// kChunksPerThread chunks per thread, each taken by whichever thread is
// free first, and a loop ends when its chunks are done, not when every
// thread has looked in: a thread whose core is busy elsewhere takes fewer
// chunks, and one the system has not run since the loop began takes none
// and holds nothing up. Which thread runs a chunk varies from call to call
// (nothing may depend on it). A waiting thread (a pool thread for the next
// loop, the caller for chunks still running) spins for up to kSpin,
// yielding its core between rounds, then sleeps on a condition variable:
// the loops of a step follow each other within microseconds, sooner than a
// sleeping thread wakes, and an idle pool holds no core for longer than
// kSpin. Only one thread may call parallel_for at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace devmap {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; the caller is one of them
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // How long a waiting thread spins before it sleeps.
  static constexpr std::chrono::microseconds kSpin{50};
  // Chunks per thread a loop is cut into, at most (one index each at least).
  static constexpr int kChunksPerThread = 4;

  int size() const { return size_; }
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  // A loop's fields; two alternate, so that a thread late for one loop
  // never reads the fields of the loop after it (a loop's slot is written
  // again two loops later, once every chunk of the loop between is done).
  struct Loop {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t n = 0;
    std::atomic<int> done{0};  // chunks finished
  };
  // The current loop's claim word: generation << 32 | chunks << 16 | next
  // chunk. A thread claims a chunk by raising `next` with a compare and
  // swap that fails once the generation has moved on, so it runs a chunk
  // only of the loop it claimed, whose slot stays put until that chunk is
  // done.
  static uint64_t claim_word(uint64_t generation, int chunks) {
    return generation << 32 | static_cast<uint64_t>(chunks) << 16;
  }
  // Runs chunks of loop `generation` until none is left to claim.
  void run_chunks(uint64_t generation);
  void worker_loop();

  int size_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  Loop loops_[2];
  std::atomic<uint64_t> claim_{0};
  // Written under mu_; read without it while spinning.
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
  bool in_loop_ = false;  // a parallel_for is running (under mu_)
};

}  // namespace devmap
