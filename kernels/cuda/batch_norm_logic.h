// The per-thread logic of the batch_norm kernels (batch_norm_kernels.cu):
// the CPU kernel's arithmetic (kernels/cpu/batch_norm.cpp) operation for
// operation (the kernels are built with --fmad=false). A channel's sums are
// shifted by its first value and kept in 16 lanes: position j of every
// sample's plane goes to lane j % 16, samples in order, and the lanes are
// added in the CPU's tree. One block per channel, one thread per lane
// (lane_sums), then one thread adds the lanes (channel_sums) and computes
// the channel's figures, which one thread per element applies. The tests
// run these functions on the CPU against the CPU kernel.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace devmap::cuda::bn {

constexpr int kLanes = 16;

struct LaneSums {  // trivial: it lives in shared memory
  double sx, sxx, sdy, sdyx;
};

// Lane `lane` of channel `ch` of x ([n, c, hw]) and, when dy is not null,
// of dy: the values at positions lane, lane + 16, ... of every plane,
// samples in order, shifted by `shift`.
DEVMAP_HD inline LaneSums lane_sums(const float* x, const float* dy, int64_t n, int64_t c, int64_t hw, int64_t ch,
                                    int lane, double shift) {
  LaneSums r = {0.0, 0.0, 0.0, 0.0};
  for (int64_t s = 0; s < n; ++s) {
    const float* xp = x + (s * c + ch) * hw;
    const float* gp = dy ? dy + (s * c + ch) * hw : nullptr;
    for (int64_t j = lane; j < hw; j += kLanes) {
      const double v = static_cast<double>(xp[j]) - shift;
      r.sx += v;
      r.sxx += v * v;
      if (gp == nullptr) continue;
      const double g = gp[j];
      r.sdy += g;
      r.sdyx += g * v;
    }
  }
  return r;
}

// ((l0 + l8) + (l4 + l12)) + ...: halves added lane-wise, three times.
DEVMAP_HD inline double add_lanes(const double* lane) {
  double v[8], q[4];
  for (int k = 0; k < 8; ++k) v[k] = lane[k] + lane[k + 8];
  for (int k = 0; k < 4; ++k) q[k] = v[k] + v[k + 4];
  return (q[0] + q[2]) + (q[1] + q[3]);
}

struct ChannelSums {
  double mean = 0, var = 0, sum_dy = 0, sum_dy_xc = 0;
};

// A channel's moments from its 16 lanes over `count` values: mean, biased
// variance; sum(dy) and sum(dy (x - mean)).
DEVMAP_HD inline ChannelSums channel_sums(const LaneSums* lanes, double shift, double count) {
  double sx[kLanes], sxx[kLanes], sdy[kLanes], sdyx[kLanes];
  for (int k = 0; k < kLanes; ++k) {
    sx[k] = lanes[k].sx;
    sxx[k] = lanes[k].sxx;
    sdy[k] = lanes[k].sdy;
    sdyx[k] = lanes[k].sdyx;
  }
  const double mean_shifted = add_lanes(sx) / count;
  ChannelSums r;
  r.mean = shift + mean_shifted;
  const double var = add_lanes(sxx) / count - mean_shifted * mean_shifted;
  r.var = var < 0.0 ? 0.0 : var;  // std::max(var, 0.0), as the CPU (NaN stays NaN)
  r.sum_dy = add_lanes(sdy);
  r.sum_dy_xc = add_lanes(sdyx) - mean_shifted * r.sum_dy;
  return r;
}

// y = (x - m) a + b in float, for a channel of mean and variance (m is
// the mean rounded to float; b carries the rounding).
struct Affine {
  float m, a, b;
};
DEVMAP_HD inline Affine forward_affine(double mean, double var, float weight, float bias, double eps) {
  const double scale = weight / sqrt(var + eps);
  const float m = static_cast<float>(mean);
  return {m, static_cast<float>(scale), static_cast<float>(bias - (mean - m) * scale)};
}

// The backward's figures of a channel: its parameter gradients' shares (in
// double, added by add_gradient_share) and dx = (dy a + (x - m) b) + c's
// float figures.
struct Backward {
  double d_weight, d_bias;
  float m, a, b, c;
};
DEVMAP_HD inline Backward backward_figures(const ChannelSums& s, float weight, double eps, double count) {
  const double rstd = 1.0 / sqrt(s.var + eps);
  const double sum_dy_xhat = s.sum_dy_xc * rstd;
  const double a = rstd * weight, b = -a * rstd * (sum_dy_xhat / count), c = -a * (s.sum_dy / count);
  const float m = static_cast<float>(s.mean);
  return {
      sum_dy_xhat, s.sum_dy, m, static_cast<float>(a), static_cast<float>(b), static_cast<float>(c + b * (m - s.mean))};
}

}  // namespace devmap::cuda::bn
