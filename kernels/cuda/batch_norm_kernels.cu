#include "kernels/cpu/gradient_add.h"
#include "kernels/cuda/batch_norm_kernels.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace devmap::cuda {
namespace {

// The CPU kernel's sums (kernels/cpu/batch_norm.cpp), operation for
// operation (the project builds CUDA with --fmad=false): shifted by the
// channel's first value, position j of every plane in lane j % 16, the
// lanes added in the CPU's tree.
constexpr int kLanes = 16;

__device__ double add_lanes(const double* lane) {
  double v[8], q[4];
  for (int k = 0; k < 8; ++k) v[k] = lane[k] + lane[k + 8];
  for (int k = 0; k < 4; ++k) q[k] = v[k] + v[k + 4];
  return (q[0] + q[2]) + (q[1] + q[3]);
}

struct ChannelSums {
  double mean, var, sum_dy, sum_dy_xc;
};

__device__ ChannelSums channel_sums(const BatchNormArgs& a, const float* dy, int64_t ch) {
  const double shift = a.n > 0 && a.hw > 0 ? a.x[ch * a.hw] : 0.0;
  double sx[kLanes] = {}, sxx[kLanes] = {}, sdy[kLanes] = {}, sdyx[kLanes] = {};
  for (int64_t s = 0; s < a.n; ++s) {
    const float* xp = a.x + (s * a.c + ch) * a.hw;
    const float* gp = dy ? dy + (s * a.c + ch) * a.hw : nullptr;
    for (int64_t j = 0; j < a.hw; ++j) {
      const int k = static_cast<int>(j % kLanes);
      const double v = static_cast<double>(xp[j]) - shift;
      sx[k] += v;
      sxx[k] += v * v;
      if (gp == nullptr) continue;
      const double g = gp[j];
      sdy[k] += g;
      sdyx[k] += g * v;
    }
  }
  const double count = static_cast<double>(a.n * a.hw);
  const double mean_shifted = add_lanes(sx) / count;
  ChannelSums r;
  r.mean = shift + mean_shifted;
  const double var = add_lanes(sxx) / count - mean_shifted * mean_shifted;
  r.var = var < 0.0 ? 0.0 : var;  // std::max(var, 0.0), as the CPU (NaN stays NaN)
  r.sum_dy = add_lanes(sdy);
  r.sum_dy_xc = add_lanes(sdyx) - mean_shifted * r.sum_dy;
  return r;
}

// Per channel: y = (x - m) a + b's figures m, a, b (floats) into
// scratch[3ch..3ch+2]; the state updated when training.
__global__ void batch_norm_stats_kernel(BatchNormArgs a) {
  DEVMAP_GRID_LOOP(ch, a.c) {
    double mean = a.running_mean[ch], var = a.running_var[ch];
    if (a.training) {
      const ChannelSums m = channel_sums(a, nullptr, ch);
      mean = m.mean;
      var = m.var;
      const double count = static_cast<double>(a.n * a.hw);
      const double unbiased = var * count / (count - 1.0);
      a.running_mean[ch] = static_cast<float>((1.0 - a.momentum) * a.running_mean[ch] + a.momentum * mean);
      a.running_var[ch] = static_cast<float>((1.0 - a.momentum) * a.running_var[ch] + a.momentum * unbiased);
      if (ch == 0) a.num_batches_tracked[0] += 1.0f;
    }
    const double scale = a.weight[ch] / sqrt(var + a.eps);
    const float m = static_cast<float>(mean);
    a.scratch[3 * ch] = m;
    a.scratch[3 * ch + 1] = static_cast<float>(scale);
    a.scratch[3 * ch + 2] = static_cast<float>(a.bias[ch] - (mean - m) * scale);
  }
}

__global__ void batch_norm_apply_kernel(BatchNormArgs a, float* y) {
  DEVMAP_GRID_LOOP(i, a.n * a.c * a.hw) {
    const int64_t ch = (i / a.hw) % a.c;
    const double* s = a.scratch + 3 * ch;
    y[i] = (a.x[i] - static_cast<float>(s[0])) * static_cast<float>(s[1]) + static_cast<float>(s[2]);
  }
}

// Per channel: the parameter gradients, and dx = (dy a + (x - m) b) + c's
// figures m, a, b, c (floats) into scratch[4ch..4ch+3].
__global__ void batch_norm_backward_channels(BatchNormArgs a, BatchNormGrads g) {
  DEVMAP_GRID_LOOP(ch, a.c) {
    const ChannelSums s = channel_sums(a, g.dy, ch);
    const double rstd = 1.0 / sqrt(s.var + a.eps);
    const double sum_dy_xhat = s.sum_dy_xc * rstd;
    g.d_weight[ch] = add_gradient_share(g.d_weight[ch], sum_dy_xhat, g.accumulate);
    g.d_bias[ch] = add_gradient_share(g.d_bias[ch], s.sum_dy, g.accumulate);
    const double count = static_cast<double>(a.n * a.hw);
    const double ga = rstd * a.weight[ch], gb = -ga * rstd * (sum_dy_xhat / count), gc = -ga * (s.sum_dy / count);
    const float m = static_cast<float>(s.mean);
    a.scratch[4 * ch] = m;
    a.scratch[4 * ch + 1] = static_cast<float>(ga);
    a.scratch[4 * ch + 2] = static_cast<float>(gb);
    a.scratch[4 * ch + 3] = static_cast<float>(gc + gb * (m - s.mean));
  }
}

__global__ void batch_norm_backward_inputs(BatchNormArgs a, BatchNormGrads g) {
  DEVMAP_GRID_LOOP(i, a.n * a.c * a.hw) {
    const int64_t ch = (i / a.hw) % a.c;
    const double* s = a.scratch + 4 * ch;
    const float m = static_cast<float>(s[0]), ga = static_cast<float>(s[1]), gb = static_cast<float>(s[2]),
                gc = static_cast<float>(s[3]);
    g.dx[i] = (g.dy[i] * ga + (a.x[i] - m) * gb) + gc;
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
