#include "kernels/cpu/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/gradient_add.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/relu.h"

namespace devmap::cpu {
namespace {

struct Layout {
  int64_t n, c, hw;  // samples, channels, positions per channel
  int64_t values() const { return n * hw; }
  const float* at(const float* x, int64_t s, int64_t ch) const { return x + (s * c + ch) * hw; }
  float* at(float* x, int64_t s, int64_t ch) const { return x + (s * c + ch) * hw; }
};

Layout layout_of(const Shape& s) {
  return Layout{s[0], s[1], s.rank() == 4 ? s[2] * s[3] : 1};
}

// A channel's sums are kept in 16 double lanes: position j of every
// sample's plane goes to lane j % 16, and the lanes are added in a fixed
// tree at the end. The lanes are two 8-wide vectors of GCC's generic vector
// type, which every CPU path computes lane by lane with the same
// operations, so the bits are the same on every path.
using Float8 = float __attribute__((vector_size(32)));
using Double8 = double __attribute__((vector_size(64)));
constexpr int kLanes = 16;

struct Lanes {
  Double8 lo{}, hi{};  // lanes 0-7 and 8-15
  DEVMAP_INLINE void add(int k, double v) { (k < 8 ? lo : hi)[k & 7] += v; }
  // ((l0 + l8) + (l4 + l12)) + ... : halves added lane-wise, three times.
  DEVMAP_INLINE double total() const {
    const Double8 v = lo + hi;
    double q[4];
    for (int k = 0; k < 4; ++k) q[k] = v[k] + v[k + 4];
    return (q[0] + q[2]) + (q[1] + q[3]);
  }
};

// (Through a reference: returning a vector by value is ABI-dependent.)
DEVMAP_INLINE void load_double8(const float* p, Double8& out) {
  Float8 f;
  std::memcpy(&f, p, sizeof f);
  out = __builtin_convertvector(f, Double8);
}

// The moments of one channel, from sums shifted by the channel's first
// value (so a large mean cancels nothing): mean and biased variance; with
// dy, also sum(dy) and sum(dy (x - mean)).
struct ChannelSums {
  double mean = 0, var = 0, sum_dy = 0, sum_dy_xc = 0;
};

DEVMAP_INLINE ChannelSums channel_sums_body(Layout l, const float* x, const float* dy, int64_t ch) {
  const double shift = l.n > 0 && l.hw > 0 ? *l.at(x, 0, ch) : 0.0;
  const int64_t full = l.hw / kLanes * kLanes;
  Lanes sx, sxx, sdy, sdyx;
  for (int64_t s = 0; s < l.n; ++s) {
    const float* xp = l.at(x, s, ch);
    const float* gp = dy ? l.at(dy, s, ch) : nullptr;
    for (int64_t j = 0; j < full; j += kLanes) {
      Double8 v0, v1;
      load_double8(xp + j, v0);
      load_double8(xp + j + 8, v1);
      v0 -= shift;
      v1 -= shift;
      sx.lo += v0;
      sx.hi += v1;
      sxx.lo += v0 * v0;
      sxx.hi += v1 * v1;
      if (gp == nullptr) continue;
      Double8 g0, g1;
      load_double8(gp + j, g0);
      load_double8(gp + j + 8, g1);
      sdy.lo += g0;
      sdy.hi += g1;
      sdyx.lo += g0 * v0;
      sdyx.hi += g1 * v1;
    }
    for (int64_t j = full; j < l.hw; ++j) {
      const int k = static_cast<int>(j - full);
      const double v = static_cast<double>(xp[j]) - shift;
      sx.add(k, v);
      sxx.add(k, v * v);
      if (gp == nullptr) continue;
      sdy.add(k, gp[j]);
      sdyx.add(k, gp[j] * v);
    }
  }
  const double count = static_cast<double>(l.values());
  const double mean_shifted = sx.total() / count;
  ChannelSums r;
  r.mean = shift + mean_shifted;
  r.var = std::max(sxx.total() / count - mean_shifted * mean_shifted, 0.0);
  r.sum_dy = sdy.total();
  // sum(dy (x - mean)) = sum(dy (x - shift)) - (mean - shift) sum(dy)
  r.sum_dy_xc = sdyx.total() - mean_shifted * r.sum_dy;
  return r;
}
DEVMAP_CPU_PATH_DISPATCH(ChannelSums, channel_sums, (Layout l, const float* x, const float* dy, int64_t ch),
                         (l, x, dy, ch))

// y = (x - m) a + b over one channel of every sample, in float (m is the
// mean rounded to float; b carries the rounding).
DEVMAP_INLINE void affine_channel_body(Layout l, const float* x, float* y, int64_t ch, float m, float a, float b) {
  for (int64_t s = 0; s < l.n; ++s) {
    const float* xp = l.at(x, s, ch);
    float* yp = l.at(y, s, ch);
    for (int64_t j = 0; j < l.hw; ++j) yp[j] = (xp[j] - m) * a + b;
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, affine_channel,
                         (Layout l, const float* x, float* y, int64_t ch, float m, float a, float b),
                         (l, x, y, ch, m, a, b))

// y = (x - m[ch]) a[ch] + b[ch] over one sample's channels [c0, c1), each
// a plane of hw values, in float: the same arithmetic per value as
// affine_channel, a sample at a time so that a pass with no statistics to
// gather first (evaluation) streams through memory.
DEVMAP_INLINE void affine_sample_body(const float* x, float* y, int64_t c0, int64_t c1, int64_t hw, const float* m,
                                      const float* a, const float* b) {
  if (hw == 1) {
    for (int64_t ch = c0; ch < c1; ++ch) y[ch] = (x[ch] - m[ch]) * a[ch] + b[ch];
    return;
  }
  for (int64_t ch = c0; ch < c1; ++ch) {
    const float* xp = x + ch * hw;
    float* yp = y + ch * hw;
    const float mc = m[ch], ac = a[ch], bc = b[ch];
    for (int64_t j = 0; j < hw; ++j) yp[j] = (xp[j] - mc) * ac + bc;
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, affine_sample,
                         (const float* x, float* y, int64_t c0, int64_t c1, int64_t hw, const float* m, const float* a,
                          const float* b),
                         (x, y, c0, c1, hw, m, a, b))

// dx = (dy a + (x - m) b) + c over one channel of every sample, in float.
DEVMAP_INLINE void input_grad_channel_body(Layout l, const float* x, const float* dy, float* dx, int64_t ch, float m,
                                           float a, float b, float c) {
  for (int64_t s = 0; s < l.n; ++s) {
    const float* xp = l.at(x, s, ch);
    const float* gp = l.at(dy, s, ch);
    float* dp = l.at(dx, s, ch);
    for (int64_t j = 0; j < l.hw; ++j) dp[j] = (gp[j] * a + (xp[j] - m) * b) + c;
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, input_grad_channel,
                         (Layout l, const float* x, const float* dy, float* dx, int64_t ch, float m, float a, float b,
                          float c),
                         (l, x, dy, dx, ch, m, a, b, c))

// y = (x - shift) scale + offset, from a channel's mean and variance: shift
// is the mean rounded to float, offset carries the rounding.
struct AffineConstants {
  float shift, scale, offset;
};

AffineConstants affine_constants(double mean, double var, float weight, float bias, double eps) {
  const double scale = weight / std::sqrt(var + eps);
  const float shift = static_cast<float>(mean);
  return {shift, static_cast<float>(scale), static_cast<float>(bias - (mean - shift) * scale)};
}

// Evaluation: the running statistics' constants per channel, then the
// affine pass (and the fused relu) a sample at a time, streaming through
// memory (with one sample, a channel range each).
void evaluate(Layout l, const ForwardArgs& args, double eps) {
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  const auto channels = static_cast<size_t>(l.c);
  std::vector<float> shift(channels), scale(channels), offset(channels);
  for (int64_t ch = 0; ch < l.c; ++ch) {
    const AffineConstants k = affine_constants(args.params[2].data[ch], args.params[3].data[ch],
                                               args.params[0].data[ch], args.params[1].data[ch], eps);
    const auto i = static_cast<size_t>(ch);
    shift[i] = k.shift;
    scale[i] = k.scale;
    offset[i] = k.offset;
  }
  const int64_t sample = l.c * l.hw;
  auto pass = [&](int64_t s, int64_t c0, int64_t c1) {
    affine_sample(x + s * sample, y + s * sample, c0, c1, l.hw, shift.data(), scale.data(), offset.data());
    if (args.relu_output) relu_in_place(y + s * sample + c0 * l.hw, (c1 - c0) * l.hw);
  };
  if (l.n == 1) {
    parallel_for(args.ctx.pool, l.c, [&](int64_t c0, int64_t c1) { pass(0, c0, c1); });
    return;
  }
  parallel_for(args.ctx.pool, l.n, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) pass(s, 0, l.c);
  });
}

}  // namespace

std::string BatchNormKernel::implementation(const Node& /*node*/) const {
  return path_kernel_name("batch_norm");
}

void BatchNormKernel::forward(const ForwardArgs& args) {
  const Layout l = layout_of(args.inputs[0].shape);
  const double eps = args.node.attrs.get_float("eps");
  const double momentum = args.node.attrs.get_float("momentum");
  const bool training = args.ctx.training;
  if (training && l.values() < 2)
    throw_invalid("batch_norm '" + args.node.name + "': expected more than 1 value per channel when training, got " +
                  std::to_string(l.values()) + " (a batch or micro-batch of " + std::to_string(l.n) + ")");
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  const float* b = args.params[1].data;
  float* running_mean = args.params[2].data;
  float* running_var = args.params[3].data;
  float* y = args.output.data;
  if (!training) {
    evaluate(l, args, eps);
    return;
  }
  // Training: per channel the batch's statistics, the state's update and
  // the affine pass, while the channel's planes are in cache.
  parallel_for(args.ctx.pool, l.c, [&](int64_t begin, int64_t end) {
    for (int64_t ch = begin; ch < end; ++ch) {
      const ChannelSums m = channel_sums(l, x, nullptr, ch);
      const double unbiased = m.var * static_cast<double>(l.values()) / static_cast<double>(l.values() - 1);
      running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * m.mean);
      running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * unbiased);
      const AffineConstants k = affine_constants(m.mean, m.var, w[ch], b[ch], eps);
      affine_channel(l, x, y, ch, k.shift, k.scale, k.offset);
      if (args.relu_output)
        for (int64_t s = 0; s < l.n; ++s) relu_in_place(l.at(y, s, ch), l.hw);
    }
  });
  args.params[4].data[0] += 1.0f;  // num_batches_tracked
}

void BatchNormKernel::backward(const BackwardArgs& args) {
  const Layout l = layout_of(args.d_output.shape);
  const double eps = args.node.attrs.get_float("eps");
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  const float* dy = args.d_output.data;
  float* dx = args.d_inputs[0].data;
  float* dw = args.d_params[0].data;
  float* db = args.d_params[1].data;
  const double count = static_cast<double>(l.values());
  parallel_for(args.ctx.pool, l.c, [&](int64_t begin, int64_t end) {
    for (int64_t ch = begin; ch < end; ++ch) {
      const ChannelSums s = channel_sums(l, x, dy, ch);
      const double rstd = 1.0 / std::sqrt(s.var + eps);
      const double sum_dy_xhat = s.sum_dy_xc * rstd;
      dw[ch] = add_gradient_share(dw[ch], sum_dy_xhat, args.accumulate);
      db[ch] = add_gradient_share(db[ch], s.sum_dy, args.accumulate);
      if (dx == nullptr) continue;
      // dx = rstd w (dy - mean(dy) - xhat mean(dy xhat)), xhat = (x - mean) rstd
      const double a = rstd * w[ch], b = -a * rstd * (sum_dy_xhat / count), c = -a * (s.sum_dy / count);
      const float m = static_cast<float>(s.mean);
      input_grad_channel(l, x, dy, dx, ch, m, static_cast<float>(a), static_cast<float>(b),
                         static_cast<float>(c + b * (m - s.mean)));
    }
  });
}

}  // namespace devmap::cpu
