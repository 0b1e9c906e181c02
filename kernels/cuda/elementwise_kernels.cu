#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace devmap::cuda {
namespace {

__global__ void add_kernel(const float* a, const float* b, float* y, int64_t n) {
  DEVMAP_GRID_LOOP(i, n) y[i] = a[i] + b[i];
}

__global__ void dropout_kernel(DropoutParams p, const float* x, float* y, int64_t n) {
  DEVMAP_GRID_LOOP(t, dropout_blocks(p, n)) dropout_block(p, x, y, n, t);
}

}  // namespace

void launch_add(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
  check_launch("add");
}

void launch_dropout(const DropoutParams& p, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dropout_kernel<<<blocks_for(dropout_blocks(p, n)), kThreads, 0, stream>>>(p, x, y, n);
  check_launch("dropout");
}

}  // namespace devmap::cuda
