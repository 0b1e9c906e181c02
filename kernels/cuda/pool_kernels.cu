#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pool_kernels.h"

namespace devmap::cuda {
namespace {

__global__ void max_pool_forward_kernel(PoolGeometry g, const float* x, float* y) {
  DEVMAP_GRID_LOOP(i, g.planes * g.out_h * g.out_w) y[i] = pool::forward_element(g, x, i);
}

__global__ void max_pool_backward_kernel(PoolGeometry g, const float* x, const float* y, const float* dy, float* dx) {
  DEVMAP_GRID_LOOP(i, g.planes * g.height * g.width) dx[i] = pool::backward_element(g, x, y, dy, i);
}

}  // namespace

void launch_max_pool_forward(const PoolGeometry& g, const float* x, float* y, cudaStream_t stream) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n <= 0) return;
  max_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, x, y);
  check_launch("max_pool2d forward");
}

void launch_max_pool_backward(const PoolGeometry& g, const float* x, const float* y, const float* dy, float* dx,
                              cudaStream_t stream) {
  const int64_t n = g.planes * g.height * g.width;
  if (n <= 0) return;
  max_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, x, y, dy, dx);
  check_launch("max_pool2d backward");
}

}  // namespace devmap::cuda
