#include "kernels/cuda/activation_kernels.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace devmap::cuda {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

// The CPU kernels' formulas (kernels/cpu/activations.cpp), term for term.
__device__ float forward_one(Activation f, float slope, float x) {
  const double d = x;
  switch (f) {
    case Activation::kGeluErf: return static_cast<float>(0.5 * d * (1.0 + erf(d * kSqrtHalf)));
    case Activation::kGeluTanh:
      return static_cast<float>(0.5 * d * (1.0 + tanh(kSqrt2OverPi * (d + kGeluCubic * d * d * d))));
    case Activation::kLeakyRelu: return x > 0.0f ? x : slope * x;
    case Activation::kSigmoid: return static_cast<float>(1.0 / (1.0 + exp(-d)));
    case Activation::kTanh: return static_cast<float>(tanh(d));
  }
  return x;
}

__device__ float backward_one(Activation f, float slope, float v, float dy) {
  const double d = v;
  switch (f) {
    case Activation::kGeluErf: {
      const double cdf = 0.5 * (1.0 + erf(d * kSqrtHalf));
      const double pdf = kInvSqrt2Pi * exp(-0.5 * d * d);
      return static_cast<float>(dy * (cdf + d * pdf));
    }
    case Activation::kGeluTanh: {
      const double t = tanh(kSqrt2OverPi * (d + kGeluCubic * d * d * d));
      const double dt = (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kGeluCubic * d * d);
      return static_cast<float>(dy * (0.5 * (1.0 + t) + 0.5 * d * dt));
    }
    case Activation::kLeakyRelu: return v > 0.0f ? dy : slope * dy;
    case Activation::kSigmoid: return dy * (v * (1.0f - v));
    case Activation::kTanh: return dy * (1.0f - v * v);
  }
  return dy;
}

__global__ void activation_forward_kernel(Activation f, float slope, const float* x, float* y, int64_t n) {
  DEVMAP_GRID_LOOP(i, n) y[i] = forward_one(f, slope, x[i]);
}

__global__ void activation_backward_kernel(Activation f, float slope, const float* v, const float* dy, float* dx,
                                           int64_t n) {
  DEVMAP_GRID_LOOP(i, n) dx[i] = backward_one(f, slope, v[i], dy[i]);
}

__global__ void softmax_forward_kernel(const float* x, float* y, int64_t rows, int64_t k) {
  DEVMAP_GRID_LOOP(n, rows) {
    const float* xr = x + n * k;
    float* yr = y + n * k;
    float m = xr[0];
    for (int64_t j = 1; j < k; ++j) m = xr[j] > m ? xr[j] : m;
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += exp(static_cast<double>(xr[j]) - m);
    for (int64_t j = 0; j < k; ++j) yr[j] = static_cast<float>(exp(static_cast<double>(xr[j]) - m) / sum);
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int64_t rows, int64_t k) {
  DEVMAP_GRID_LOOP(n, rows) {
    const float* yr = y + n * k;
    const float* dyr = dy + n * k;
    double dot = 0.0;
    for (int64_t j = 0; j < k; ++j) dot += static_cast<double>(dyr[j]) * yr[j];
    float* dxr = dx + n * k;
    for (int64_t j = 0; j < k; ++j) dxr[j] = static_cast<float>(yr[j] * (dyr[j] - dot));
  }
}

}  // namespace

void launch_activation_forward(Activation f, float slope, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  activation_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, slope, x, y, n);
  check_launch("activation forward");
}

void launch_activation_backward(Activation f, float slope, const float* v, const float* dy, float* dx, int64_t n,
                                cudaStream_t stream) {
  if (n <= 0) return;
  activation_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, slope, v, dy, dx, n);
  check_launch("activation backward");
}

void launch_softmax_forward(const float* x, float* y, int64_t rows, int64_t k, cudaStream_t stream) {
  if (rows <= 0 || k <= 0) return;
  softmax_forward_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(x, y, rows, k);
  check_launch("softmax forward");
}

void launch_softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k, cudaStream_t stream) {
  if (rows <= 0 || k <= 0) return;
  softmax_backward_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(y, dy, dx, rows, k);
  check_launch("softmax backward");
}

}  // namespace devmap::cuda
