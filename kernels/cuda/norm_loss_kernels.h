// Hand-written kernels for layer_norm and mse_loss, with the CPU kernels'
// arithmetic (kernels/cpu/layer_norm.h, kernels/cpu/mse_loss.h): sums in
// double in index order, one thread per sample (or per feature for the
// parameter gradients, summing samples in order).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmap::cuda {

struct LayerNormArgs {
  const float* x = nullptr;  // [rows, features]
  const float* weight = nullptr;
  const float* bias = nullptr;
  int64_t rows = 0, features = 0;
  double eps = 1e-5;
};

// y = (x - mean) rstd weight + bias per row.
void launch_layer_norm_forward(const LayerNormArgs& a, float* y, cudaStream_t stream);

struct LayerNormGrads {
  const float* dy = nullptr;
  float* dx = nullptr;  // null: no input gradient
  float* d_weight = nullptr;
  float* d_bias = nullptr;
  bool accumulate = false;    // add to d_weight and d_bias
  double* moments = nullptr;  // 2 x rows doubles of scratch (mean, rstd per row)
};

void launch_layer_norm_backward(const LayerNormArgs& a, const LayerNormGrads& g, cudaStream_t stream);

// y[0] = sum of (p - t)^2 over n = rows x features elements / denominator;
// `partial` holds rows doubles of scratch.
void launch_mse_forward(const float* p, const float* t, double* partial, float* y, int64_t rows, int64_t features,
                        double denominator, cudaStream_t stream);
// dp = dy[0] 2 (p - t) / denominator over n elements.
void launch_mse_backward(const float* p, const float* t, const float* dy, float* dp, int64_t n, double denominator,
                         cudaStream_t stream);

}  // namespace devmap::cuda
