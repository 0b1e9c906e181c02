// The optimizers' elementwise updates: optimizer_logic.h, one thread per
// element. Hyper-parameters arrive rounded to float, as the CPU rounds them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/optimizer_logic.h"

namespace devmap::cuda {

// p -= lr * (g + wd * p)
void launch_sgd(float* p, const float* g, int64_t n, float lr, float wd, cudaStream_t stream);
// v = momentum * v + (g + wd * p); p -= lr * v
void launch_momentum(float* p, const float* g, float* v, int64_t n, float lr, float momentum, float wd,
                     cudaStream_t stream);

// g' = g + wd * p; m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'*g';
// p -= step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps)
void launch_adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamStep& s, cudaStream_t stream);

}  // namespace devmap::cuda
