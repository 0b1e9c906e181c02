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
  for (int i = 1; i < size_; ++i) threads_.emplace_back([this] { worker_loop(); });
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

void ThreadPool::run_chunks(uint64_t generation) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (word >> 32 != (generation & 0xffffffffu)) return;  // the loop has ended
    const int chunks = static_cast<int>(word >> 16 & 0xffffu), next = static_cast<int>(word & 0xffffu);
    if (next >= chunks) return;
    if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    Loop& loop = loops_[generation & 1];
    auto [b, e] = chunk(loop.n, chunks, next);
    (*loop.fn)(b, e);
    if (loop.done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
    word = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (size_ == 1 || n == 1) {
    fn(0, n);
    return;
  }
  // The claim word holds 16 bits of chunk count (threads are far fewer).
  const int chunks = static_cast<int>(std::min<int64_t>({int64_t{size_} * kChunksPerThread, n, 0xffff}));
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    assert(!in_loop_ && "parallel_for is not reentrant");
    in_loop_ = true;
    generation = generation_.load(std::memory_order_relaxed) + 1;
    Loop& loop = loops_[generation & 1];
    loop.fn = &fn;
    loop.n = n;
    loop.done.store(0, std::memory_order_relaxed);
    claim_.store(claim_word(generation & 0xffffffffu, chunks), std::memory_order_release);
    generation_.store(generation, std::memory_order_release);
  }
  work_cv_.notify_all();
  run_chunks(generation);
  Loop& loop = loops_[generation & 1];
  const auto all_done = [&] { return loop.done.load(std::memory_order_acquire) == chunks; };
  spin_until(all_done);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, all_done);  // returns at once when the spin saw it done
  loop.fn = nullptr;
  in_loop_ = false;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
    }
    run_chunks(seen);
  }
}

}  // namespace devmap
