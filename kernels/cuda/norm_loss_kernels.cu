#include "kernels/cpu/gradient_add.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/norm_loss_kernels.h"

namespace devmap::cuda {
namespace {

struct Moments {
  double mean, rstd;
};

__device__ Moments row_moments(const float* x, int64_t f, double eps) {
  double sum = 0.0;
  for (int64_t j = 0; j < f; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(f);
  double sq = 0.0;
  for (int64_t j = 0; j < f; ++j) sq += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / sqrt(sq / static_cast<double>(f) + eps)};
}

__global__ void layer_norm_forward_kernel(LayerNormArgs a, float* y) {
  DEVMAP_GRID_LOOP(n, a.rows) {
    const float* xr = a.x + n * a.features;
    const Moments m = row_moments(xr, a.features, a.eps);
    float* yr = y + n * a.features;
    for (int64_t j = 0; j < a.features; ++j)
      yr[j] = static_cast<float>((xr[j] - m.mean) * m.rstd * a.weight[j] + a.bias[j]);
  }
}

// Per row: its moments into scratch, and dx when wanted.
__global__ void layer_norm_backward_rows(LayerNormArgs a, LayerNormGrads g) {
  DEVMAP_GRID_LOOP(n, a.rows) {
    const int64_t f = a.features;
    const float* xr = a.x + n * f;
    const float* dyr = g.dy + n * f;
    const Moments m = row_moments(xr, f, a.eps);
    g.moments[2 * n] = m.mean;
    g.moments[2 * n + 1] = m.rstd;
    if (g.dx == nullptr) continue;
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = 0; j < f; ++j) {
      const double gj = static_cast<double>(dyr[j]) * a.weight[j];
      sum_g += gj;
      sum_gx += gj * (xr[j] - m.mean) * m.rstd;
    }
    const double mean_g = sum_g / static_cast<double>(f), mean_gx = sum_gx / static_cast<double>(f);
    float* dxr = g.dx + n * f;
    for (int64_t j = 0; j < f; ++j) {
      const double xhat = (xr[j] - m.mean) * m.rstd;
      dxr[j] = static_cast<float>(m.rstd * (static_cast<double>(dyr[j]) * a.weight[j] - mean_g - xhat * mean_gx));
    }
  }
}

// Per feature: the parameter gradients, samples in order.
__global__ void layer_norm_backward_params(LayerNormArgs a, LayerNormGrads g) {
  DEVMAP_GRID_LOOP(j, a.features) {
    double sw = 0.0, sb = 0.0;
    for (int64_t n = 0; n < a.rows; ++n) {
      const double d = g.dy[n * a.features + j];
      sw += d * (a.x[n * a.features + j] - g.moments[2 * n]) * g.moments[2 * n + 1];
      sb += d;
    }
    g.d_weight[j] = add_gradient_share(g.d_weight[j], sw, g.accumulate);
    g.d_bias[j] = add_gradient_share(g.d_bias[j], sb, g.accumulate);
  }
}

__global__ void mse_rows_kernel(const float* p, const float* t, double* partial, int64_t rows, int64_t f) {
  DEVMAP_GRID_LOOP(n, rows) {
    double sum = 0.0;
    for (int64_t j = n * f; j < (n + 1) * f; ++j) {
      const double d = static_cast<double>(p[j]) - t[j];
      sum += d * d;
    }
    partial[n] = sum;
  }
}

// One thread: the rows' sums in order, as the CPU kernel adds them.
__global__ void mse_total_kernel(const double* partial, int64_t rows, double denominator, float* y) {
  double sum = 0.0;
  for (int64_t n = 0; n < rows; ++n) sum += partial[n];
  y[0] = static_cast<float>(sum / denominator);
}

__global__ void mse_backward_kernel(const float* p, const float* t, const float* dy, float* dp, int64_t n,
                                    double denominator) {
  const double scale = 2.0 * static_cast<double>(dy[0]) / denominator;
  DEVMAP_GRID_LOOP(i, n) dp[i] = static_cast<float>(scale * (static_cast<double>(p[i]) - t[i]));
}

}  // namespace

void launch_layer_norm_forward(const LayerNormArgs& a, float* y, cudaStream_t stream) {
  if (a.rows <= 0) return;
  layer_norm_forward_kernel<<<blocks_for(a.rows), kThreads, 0, stream>>>(a, y);
  check_launch("layer_norm forward");
}

void launch_layer_norm_backward(const LayerNormArgs& a, const LayerNormGrads& g, cudaStream_t stream) {
  if (a.rows <= 0) return;
  layer_norm_backward_rows<<<blocks_for(a.rows), kThreads, 0, stream>>>(a, g);
  check_launch("layer_norm backward (rows)");
  layer_norm_backward_params<<<blocks_for(a.features), kThreads, 0, stream>>>(a, g);
  check_launch("layer_norm backward (parameters)");
}

void launch_mse_forward(const float* p, const float* t, double* partial, float* y, int64_t rows, int64_t features,
                        double denominator, cudaStream_t stream) {
  if (rows <= 0) return;
  mse_rows_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(p, t, partial, rows, features);
  check_launch("mse_loss forward (rows)");
  mse_total_kernel<<<1, 1, 0, stream>>>(partial, rows, denominator, y);
  check_launch("mse_loss forward (total)");
}

void launch_mse_backward(const float* p, const float* t, const float* dy, float* dp, int64_t n, double denominator,
                         cudaStream_t stream) {
  if (n <= 0) return;
  mse_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, t, dy, dp, n, denominator);
  check_launch("mse_loss backward");
}

}  // namespace devmap::cuda
