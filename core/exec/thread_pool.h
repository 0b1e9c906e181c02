// ThreadPool: a fixed set of threads that split a loop into contiguous
// chunks. Contract: parallel_for(n, fn) calls fn(begin, end) on disjoint
// ranges covering [0, n), chunk boundaries depend only on n and the pool
// size, and returns when all are done. Idle threads sleep on a condition
// variable: they never spin and so never steal a core from a peer process.
// Only one thread may call parallel_for at a time.
#pragma once

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
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace devmap
