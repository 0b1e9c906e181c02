// ThreadPool: a fixed set of threads that split a loop into contiguous
// chunks. Contract: parallel_for(n, fn) calls fn(begin, end) on disjoint
// ranges covering [0, n), chunk boundaries depend only on n and the pool
// size, and returns when all are done. A thread waiting (a pool thread for
// the next loop, the caller for the pool's parts) spins for up to kSpin,
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

  int size() const { return size_; }
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);

  int size_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  // Written under mu_; read without it while spinning.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;
};

}  // namespace devmap
