// Hand-written kernels for batch_norm with the CPU kernel's arithmetic
// (kernels/cpu/batch_norm.h): one block per channel, one thread per lane of
// the CPU's 16, sums its values in double in the CPU's order, and one
// thread adds the lanes in the CPU's tree (batch_norm_logic.h); one thread
// per element then normalises (or computes dx) in float from the channel's
// figures kept in scratch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmap::cuda {

struct BatchNormArgs {
  const float* x = nullptr;  // [n, c, hw]
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  float* num_batches_tracked = nullptr;  // one float
  int64_t n = 0, c = 0, hw = 1;
  double eps = 1e-5, momentum = 0.1;
  bool training = false;
  double* scratch = nullptr;  // 4 x c doubles
};

// Training: batch statistics, and the state updated once; else the running
// statistics.
void launch_batch_norm_forward(const BatchNormArgs& a, float* y, cudaStream_t stream);

struct BatchNormGrads {
  const float* dy = nullptr;
  float* dx = nullptr;  // null: no input gradient
  float* d_weight = nullptr;
  float* d_bias = nullptr;
  bool accumulate = false;  // add to d_weight and d_bias
};

// Batch statistics recomputed from x (backward runs only when training).
void launch_batch_norm_backward(const BatchNormArgs& a, const BatchNormGrads& g, cudaStream_t stream);

}  // namespace devmap::cuda
