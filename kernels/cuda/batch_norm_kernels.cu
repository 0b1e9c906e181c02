#include "kernels/cuda/batch_norm_kernels.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace devmap::cuda {
namespace {

struct Moments {
  double mean, var;  // var biased
};

__device__ Moments channel_moments(const BatchNormArgs& a, int64_t ch) {
  double sum = 0.0;
  for (int64_t s = 0; s < a.n; ++s) {
    const float* p = a.x + (s * a.c + ch) * a.hw;
    for (int64_t j = 0; j < a.hw; ++j) sum += p[j];
  }
  const double count = static_cast<double>(a.n * a.hw);
  const double mean = sum / count;
  double sq = 0.0;
  for (int64_t s = 0; s < a.n; ++s) {
    const float* p = a.x + (s * a.c + ch) * a.hw;
    for (int64_t j = 0; j < a.hw; ++j) sq += (p[j] - mean) * (p[j] - mean);
  }
  return {mean, sq / count};
}

// Per channel: mean and rstd into scratch[2ch], scratch[2ch+1]; the state
// updated when training.
__global__ void batch_norm_stats_kernel(BatchNormArgs a) {
  DEVMAP_GRID_LOOP(ch, a.c) {
    Moments m{a.running_mean[ch], a.running_var[ch]};
    if (a.training) {
      m = channel_moments(a, ch);
      const double count = static_cast<double>(a.n * a.hw);
      const double unbiased = m.var * count / (count - 1.0);
      a.running_mean[ch] = static_cast<float>((1.0 - a.momentum) * a.running_mean[ch] + a.momentum * m.mean);
      a.running_var[ch] = static_cast<float>((1.0 - a.momentum) * a.running_var[ch] + a.momentum * unbiased);
      if (ch == 0) a.num_batches_tracked[0] += 1.0f;
    }
    a.scratch[2 * ch] = m.mean;
    a.scratch[2 * ch + 1] = 1.0 / sqrt(m.var + a.eps);
  }
}

__global__ void batch_norm_apply_kernel(BatchNormArgs a, float* y) {
  DEVMAP_GRID_LOOP(i, a.n * a.c * a.hw) {
    const int64_t ch = (i / a.hw) % a.c;
    y[i] = static_cast<float>((a.x[i] - a.scratch[2 * ch]) * a.scratch[2 * ch + 1] * a.weight[ch] + a.bias[ch]);
  }
}

// Per channel: the parameter gradients, and mean, rstd, mean(dy), mean(dy
// xhat) into scratch[4ch..4ch+3] for dx.
__global__ void batch_norm_backward_channels(BatchNormArgs a, BatchNormGrads g) {
  DEVMAP_GRID_LOOP(ch, a.c) {
    const Moments m = channel_moments(a, ch);
    const double rstd = 1.0 / sqrt(m.var + a.eps);
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t s = 0; s < a.n; ++s) {
      const float* xp = a.x + (s * a.c + ch) * a.hw;
      const float* gp = g.dy + (s * a.c + ch) * a.hw;
      for (int64_t j = 0; j < a.hw; ++j) {
        sum_dy += gp[j];
        sum_dy_xhat += gp[j] * (xp[j] - m.mean) * rstd;
      }
    }
    g.d_weight[ch] = static_cast<float>(g.accumulate ? g.d_weight[ch] + sum_dy_xhat : sum_dy_xhat);
    g.d_bias[ch] = static_cast<float>(g.accumulate ? g.d_bias[ch] + sum_dy : sum_dy);
    const double count = static_cast<double>(a.n * a.hw);
    a.scratch[4 * ch] = m.mean;
    a.scratch[4 * ch + 1] = rstd;
    a.scratch[4 * ch + 2] = sum_dy / count;
    a.scratch[4 * ch + 3] = sum_dy_xhat / count;
  }
}

__global__ void batch_norm_backward_inputs(BatchNormArgs a, BatchNormGrads g) {
  DEVMAP_GRID_LOOP(i, a.n * a.c * a.hw) {
    const int64_t ch = (i / a.hw) % a.c;
    const double* s = a.scratch + 4 * ch;
    const double xhat = (a.x[i] - s[0]) * s[1];
    const double scale = s[1] * a.weight[ch];
    g.dx[i] = static_cast<float>(scale * (g.dy[i] - s[2] - xhat * s[3]));
  }
}

}  // namespace

void launch_batch_norm_forward(const BatchNormArgs& a, float* y, cudaStream_t stream) {
  if (a.c <= 0 || a.n <= 0) return;
  batch_norm_stats_kernel<<<blocks_for(a.c), kThreads, 0, stream>>>(a);
  check_launch("batch_norm statistics");
  batch_norm_apply_kernel<<<blocks_for(a.n * a.c * a.hw), kThreads, 0, stream>>>(a, y);
  check_launch("batch_norm forward");
}

void launch_batch_norm_backward(const BatchNormArgs& a, const BatchNormGrads& g, cudaStream_t stream) {
  if (a.c <= 0 || a.n <= 0) return;
  batch_norm_backward_channels<<<blocks_for(a.c), kThreads, 0, stream>>>(a, g);
  check_launch("batch_norm backward (channels)");
  if (g.dx == nullptr) return;
  batch_norm_backward_inputs<<<blocks_for(a.n * a.c * a.hw), kThreads, 0, stream>>>(a, g);
  check_launch("batch_norm backward (inputs)");
}

}  // namespace devmap::cuda
