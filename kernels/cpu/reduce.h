// Fixed-order sums for the CPU kernels' reductions (bias gradients).
// Contract: the order of the additions depends only on the length, never on
// threads or alignment, so the bits are reproducible; the partial sums are
// kept in several independent double accumulators so that the loop
// vectorises (without -ffast-math).
#pragma once

#include <cstdint>

namespace devmap::cpu {

// sum(x[0..n)) in double: element i goes to accumulator i % 8, the
// accumulators are added pairwise ((0+1)+(2+3))+((4+5)+(6+7)).
inline double sum_fixed_order(const float* x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(x[i + j]);
  for (int j = 0; i < n; ++i, ++j) acc[j] += static_cast<double>(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace devmap::cpu
