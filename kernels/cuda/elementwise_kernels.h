// Small elementwise kernels for add and dropout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dropout_logic.h"

namespace devmap::cuda {

// y[i] = a[i] + b[i].
void launch_add(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);

// The dropout of dropout_logic.h, one thread per Philox block.
void launch_dropout(const DropoutParams& p, const float* x, float* y, int64_t n, cudaStream_t stream);

}  // namespace devmap::cuda
