#include "kernels/cuda/avg_pool_kernels.h"
#include "kernels/cuda/avg_pool_logic.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace devmap::cuda {
namespace {

__global__ void avg_pool_forward_kernel(PoolGeometry g, const float* x, float* y) {
  DEVMAP_GRID_LOOP(i, g.planes * g.out_h * g.out_w) y[i] = avg_pool::forward_element(g, x, i);
}

__global__ void avg_pool_backward_kernel(PoolGeometry g, const float* dy, float* dx) {
  DEVMAP_GRID_LOOP(i, g.planes * g.height * g.width) dx[i] = avg_pool::backward_element(g, dy, i);
}

__global__ void global_avg_pool_forward_kernel(const float* x, int64_t planes, int64_t area, float* y) {
  DEVMAP_GRID_LOOP(i, planes) y[i] = avg_pool::global_forward_element(x, area, i);
}

__global__ void global_avg_pool_backward_kernel(const float* dy, int64_t planes, int64_t area, float* dx) {
  DEVMAP_GRID_LOOP(i, planes * area) dx[i] = avg_pool::global_backward_element(dy, area, i);
}

}  // namespace

void launch_avg_pool_forward(const PoolGeometry& g, const float* x, float* y, cudaStream_t stream) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n <= 0) return;
  avg_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, x, y);
  check_launch("avg_pool2d forward");
}

void launch_avg_pool_backward(const PoolGeometry& g, const float* dy, float* dx, cudaStream_t stream) {
  const int64_t n = g.planes * g.height * g.width;
  if (n <= 0) return;
  avg_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, dy, dx);
  check_launch("avg_pool2d backward");
}

void launch_global_avg_pool_forward(const float* x, int64_t planes, int64_t area, float* y, cudaStream_t stream) {
  if (planes <= 0) return;
  global_avg_pool_forward_kernel<<<blocks_for(planes), kThreads, 0, stream>>>(x, planes, area, y);
  check_launch("global_avg_pool forward");
}

void launch_global_avg_pool_backward(const float* dy, int64_t planes, int64_t area, float* dx, cudaStream_t stream) {
  const int64_t n = planes * area;
  if (n <= 0) return;
  global_avg_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dy, planes, area, dx);
  check_launch("global_avg_pool backward");
}

}  // namespace devmap::cuda
