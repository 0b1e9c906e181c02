// Launch geometry for the hand-written kernels: 1-D grids over n items,
// grid-stride loops (a kernel covers any n with a bounded grid).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

namespace devmap::cuda {

constexpr int kThreads = 256;

// Blocks for n items at kThreads per block, at most 65535*4 (the loops stride).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, int64_t{65535} * 4));
}

// for (i = this thread's first item; i < n; i += all threads)
#define DEVMAP_GRID_LOOP(i, n)                                                           \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace devmap::cuda
