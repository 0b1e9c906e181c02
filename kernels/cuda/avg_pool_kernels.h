// Hand-written average pooling kernels (avg_pool2d, global_avg_pool), one
// thread per element running avg_pool_logic.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/pool_logic.h"

namespace devmap::cuda {

// avg_pool2d: y (forward) and dx (backward, overwritten; a gather, no atomics).
void launch_avg_pool_forward(const PoolGeometry& g, const float* x, float* y, cudaStream_t stream);
void launch_avg_pool_backward(const PoolGeometry& g, const float* dy, float* dx, cudaStream_t stream);

// global_avg_pool over `planes` planes of `area` elements.
void launch_global_avg_pool_forward(const float* x, int64_t planes, int64_t area, float* y, cudaStream_t stream);
void launch_global_avg_pool_backward(const float* dy, int64_t planes, int64_t area, float* dx, cudaStream_t stream);

}  // namespace devmap::cuda
