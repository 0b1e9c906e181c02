#include "kernels/cpu/batch_norm.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "kernels/cpu/parallel.h"

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

struct Moments {
  double mean, var;  // var biased
};

// Channel ch's mean and biased variance, summed in sample, position order.
Moments batch_moments(const Layout& l, const float* x, int64_t ch) {
  double sum = 0.0;
  for (int64_t s = 0; s < l.n; ++s) {
    const float* p = l.at(x, s, ch);
    for (int64_t j = 0; j < l.hw; ++j) sum += p[j];
  }
  const double mean = sum / static_cast<double>(l.values());
  double sq = 0.0;
  for (int64_t s = 0; s < l.n; ++s) {
    const float* p = l.at(x, s, ch);
    for (int64_t j = 0; j < l.hw; ++j) sq += (p[j] - mean) * (p[j] - mean);
  }
  return {mean, sq / static_cast<double>(l.values())};
}

}  // namespace

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
  parallel_for(args.ctx.pool, l.c, [&](int64_t begin, int64_t end) {
    for (int64_t ch = begin; ch < end; ++ch) {
      Moments m{running_mean[ch], running_var[ch]};
      if (training) {
        m = batch_moments(l, x, ch);
        const double unbiased = m.var * static_cast<double>(l.values()) / static_cast<double>(l.values() - 1);
        running_mean[ch] = static_cast<float>((1.0 - momentum) * running_mean[ch] + momentum * m.mean);
        running_var[ch] = static_cast<float>((1.0 - momentum) * running_var[ch] + momentum * unbiased);
      }
      const double rstd = 1.0 / std::sqrt(m.var + eps);
      for (int64_t s = 0; s < l.n; ++s) {
        const float* xp = l.at(x, s, ch);
        float* yp = l.at(y, s, ch);
        for (int64_t j = 0; j < l.hw; ++j) yp[j] = static_cast<float>((xp[j] - m.mean) * rstd * w[ch] + b[ch]);
      }
    }
  });
  if (training) args.params[4].data[0] += 1.0f;
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
      const Moments m = batch_moments(l, x, ch);
      const double rstd = 1.0 / std::sqrt(m.var + eps);
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      for (int64_t s = 0; s < l.n; ++s) {
        const float* xp = l.at(x, s, ch);
        const float* gp = l.at(dy, s, ch);
        for (int64_t j = 0; j < l.hw; ++j) {
          sum_dy += gp[j];
          sum_dy_xhat += gp[j] * (xp[j] - m.mean) * rstd;
        }
      }
      dw[ch] = static_cast<float>(args.accumulate ? dw[ch] + sum_dy_xhat : sum_dy_xhat);
      db[ch] = static_cast<float>(args.accumulate ? db[ch] + sum_dy : sum_dy);
      if (dx == nullptr) continue;
      const double mean_dy = sum_dy / count, mean_dy_xhat = sum_dy_xhat / count, scale = rstd * w[ch];
      for (int64_t s = 0; s < l.n; ++s) {
        const float* xp = l.at(x, s, ch);
        const float* gp = l.at(dy, s, ch);
        float* dp = l.at(dx, s, ch);
        for (int64_t j = 0; j < l.hw; ++j) {
          const double xhat = (xp[j] - m.mean) * rstd;
          dp[j] = static_cast<float>(scale * (gp[j] - mean_dy - xhat * mean_dy_xhat));
        }
      }
    }
  });
}

}  // namespace devmap::cpu
