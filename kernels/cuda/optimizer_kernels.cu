#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/optimizer_kernels.h"

namespace devmap::cuda {
namespace {

__global__ void sgd_kernel(float* p, const float* g, int64_t n, float lr, float wd) {
  DEVMAP_GRID_LOOP(i, n) sgd_element(p[i], g[i], lr, wd);
}

__global__ void momentum_kernel(float* p, const float* g, float* v, int64_t n, float lr, float momentum, float wd) {
  DEVMAP_GRID_LOOP(i, n) momentum_element(p[i], g[i], v[i], lr, momentum, wd);
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, int64_t n, AdamStep s) {
  DEVMAP_GRID_LOOP(i, n) adam_element(p[i], g[i], m[i], v[i], s);
}

}  // namespace

void launch_sgd(float* p, const float* g, int64_t n, float lr, float wd, cudaStream_t stream) {
  if (n <= 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, n, lr, wd);
  check_launch("sgd update");
}

void launch_momentum(float* p, const float* g, float* v, int64_t n, float lr, float momentum, float wd,
                     cudaStream_t stream) {
  if (n <= 0) return;
  momentum_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, v, n, lr, momentum, wd);
  check_launch("momentum update");
}

void launch_adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamStep& s, cudaStream_t stream) {
  if (n <= 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, g, m, v, n, s);
  check_launch("adam update");
}

}  // namespace devmap::cuda
