#include "core/exec/thread_pool.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>

namespace devmap {
namespace {

// Chunk i of `parts` over [0, n): sizes differ by at most one.
std::pair<int64_t, int64_t> chunk(int64_t n, int parts, int i) {
  int64_t base = n / parts, rem = n % parts;
  int64_t begin = i * base + std::min<int64_t>(i, rem);
  return {begin, begin + base + (i < rem ? 1 : 0)};
}

// One step of a spin: tells the core that this thread is waiting.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until done() or kSpin has passed, yielding the core between rounds
// to any other thread that wants it; returns done().
template <class Done>
bool spin_until(const Done& done) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + ThreadPool::kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      relax();
    }
    if (Clock::now() >= end) return done();
    std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : size_(std::max(threads, 1)) {
  for (int i = 1; i < size_; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    ++generation_;  // ends the workers' spins
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int parts = static_cast<int>(std::min<int64_t>(size_, n));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    assert(fn_ == nullptr && "parallel_for is not reentrant");
    fn_ = &fn;
    n_ = n;
    pending_.store(size_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();
  auto [b, e] = chunk(n, parts, 0);
  fn(b, e);
  spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_.load(std::memory_order_relaxed) == 0; });
  fn_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t n;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      fn = fn_;
      n = n_;
    }
    int parts = static_cast<int>(std::min<int64_t>(size_, n));
    if (index < parts) {
      auto [b, e] = chunk(n, parts, index);
      (*fn)(b, e);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.fetch_sub(1, std::memory_order_release) == 1) done_cv_.notify_one();
    }
  }
}

}  // namespace devmap
