// Hand-written kernels for the activations (gelu, leaky_relu, sigmoid,
// tanh: one thread per element) and softmax (one thread per sample, its
// sums in double in index order, as the CPU kernel).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmap::cuda {

enum class Activation { kGeluErf, kGeluTanh, kLeakyRelu, kSigmoid, kTanh };

// y = f(x) for n elements; `slope` is leaky_relu's negative_slope.
void launch_activation_forward(Activation f, float slope, const float* x, float* y, int64_t n, cudaStream_t stream);
// dx = dy * f'(.) for n elements, from `v`: the forward input for gelu and
// leaky_relu, the forward output for sigmoid and tanh.
void launch_activation_backward(Activation f, float slope, const float* v, const float* dy, float* dx, int64_t n,
                                cudaStream_t stream);

// Row-wise softmax of [rows, k] and its gradient from the output.
void launch_softmax_forward(const float* x, float* y, int64_t rows, int64_t k, cudaStream_t stream);
void launch_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k, cudaStream_t stream);

}  // namespace devmap::cuda
