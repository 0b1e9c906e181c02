// Fixed-order sums for the CPU kernels' reductions (bias gradients).
// Contract: the order of the additions depends only on the length, never on
// threads, alignment or the CPU path, so the bits are reproducible; the
// partial sums are kept in several independent double accumulators so that
// the loop vectorises (without -ffast-math), compiled once per CPU path
// (cpu_dispatch.h).
#pragma once

#include <cstdint>

namespace devmap::cpu {

// sum(x[0..n)) in double: element i goes to accumulator i % 8, the
// accumulators are added pairwise ((0+1)+(2+3))+((4+5)+(6+7)).
double sum_fixed_order(const float* x, int64_t n);

}  // namespace devmap::cpu
