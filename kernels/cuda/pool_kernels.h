// Hand-written max pooling kernels with the CPU kernel's exact rules, one
// thread per element running pool_logic.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/pool_logic.h"

namespace devmap::cuda {

// y = each window's maximum, one thread per output element.
void launch_max_pool_forward(const PoolGeometry& g, const float* x, float* y, cudaStream_t stream);

// dx (overwritten): one thread per input element gathers dy of every window
// whose chosen element it is, in output order (oh, then ow), the order in
// which the CPU kernel adds them, so overlapping windows give the CPU's
// bits without atomics. y (the forward output) gives each window's maximum;
// when null the maxima are recomputed from x.
void launch_max_pool_backward(const PoolGeometry& g, const float* x, const float* y, const float* dy, float* dx,
                              cudaStream_t stream);

}  // namespace devmap::cuda
