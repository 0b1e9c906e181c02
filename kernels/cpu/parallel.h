// Loops over the worker's ThreadPool for the non-BLAS parts of the CPU
// kernels. Contract: every helper hands out disjoint index ranges, so a loop
// body that writes only the outputs of its own indices (and reduces, if at
// all, inside one index in a fixed order) gives the same bits for any pool
// size and any chunking.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/exec/thread_pool.h"

namespace devmap::cpu {

// Runs fn(begin, end) over disjoint ranges covering [0, n): on the pool when
// there is one with more than one thread, else inline. The std::function the
// pool takes captures a single reference, so it never allocates.
template <class Fn>
void parallel_for(ThreadPool* pool, int64_t n, const Fn& fn) {
  if (n <= 0) return;
  if (pool == nullptr || pool->size() == 1 || n == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool->parallel_for(n, [&fn](int64_t begin, int64_t end) { fn(begin, end); });
}

// Like parallel_for for elementwise loops over n elements: ranges hold at
// least `grain` elements (small tensors stay on the calling thread) and there
// are at most pool-size of them.
template <class Fn>
void parallel_for_elements(ThreadPool* pool, int64_t n, const Fn& fn, int64_t grain = 32768) {
  if (n <= 0) return;
  int64_t threads = pool == nullptr ? 1 : pool->size();
  int64_t blocks = std::clamp<int64_t>((n + grain - 1) / grain, 1, threads);
  parallel_for(pool, blocks, [&](int64_t b0, int64_t b1) { fn(b0 * n / blocks, b1 * n / blocks); });
}

// Like parallel_for over `rows` rows of `row_elements` elements each, for
// loops whose rows are independent: a range holds at least about `grain`
// elements, so a small batch (a loss over 64 x 10 logits) stays on the
// calling thread instead of paying to wake the pool for less work than
// the wake-up costs.
template <class Fn>
void parallel_for_rows(ThreadPool* pool, int64_t rows, int64_t row_elements, const Fn& fn, int64_t grain = 32768) {
  parallel_for_elements(pool, rows, fn, std::max<int64_t>(1, grain / std::max<int64_t>(1, row_elements)));
}

// Part i of n items cut into `parts` runs of consecutive items whose sizes
// differ by at most one: [i*n/parts, (i+1)*n/parts).
inline std::pair<int64_t, int64_t> split_range(int64_t n, int64_t parts, int64_t i) {
  return {i * n / parts, (i + 1) * n / parts};
}

}  // namespace devmap::cpu
