#include "kernels/cpu/layer_norm.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/gradient_add.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

struct Moments {
  double mean, rstd;  // rstd = 1 / sqrt(var + eps)
};

Moments moments(const float* x, int64_t f, double eps) {
  double sum = 0.0;
  for (int64_t j = 0; j < f; ++j) sum += x[j];
  const double mean = sum / static_cast<double>(f);
  double sq = 0.0;
  for (int64_t j = 0; j < f; ++j) sq += (x[j] - mean) * (x[j] - mean);
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(f) + eps)};
}

}  // namespace

void LayerNormKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.output.shape[0], f = args.params[0].numel();
  const double eps = args.node.attrs.get_float("eps");
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  const float* b = args.params[1].data;
  float* y = args.output.data;
  parallel_for_rows(args.ctx.pool, batch, f, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* xr = x + n * f;
      const Moments m = moments(xr, f, eps);
      float* yr = y + n * f;
      for (int64_t j = 0; j < f; ++j) yr[j] = static_cast<float>((xr[j] - m.mean) * m.rstd * w[j] + b[j]);
    }
  });
}

void LayerNormKernel::backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0], f = args.params[0].numel();
  const double eps = args.node.attrs.get_float("eps");
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  const float* dy = args.d_output.data;
  float* dx = args.d_inputs[0].data;
  if (dx != nullptr) {
    parallel_for_rows(args.ctx.pool, batch, f, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        const float* xr = x + n * f;
        const float* dyr = dy + n * f;
        const Moments m = moments(xr, f, eps);
        double sum_g = 0.0, sum_gx = 0.0;
        for (int64_t j = 0; j < f; ++j) {
          const double g = static_cast<double>(dyr[j]) * w[j];
          sum_g += g;
          sum_gx += g * (xr[j] - m.mean) * m.rstd;
        }
        const double mean_g = sum_g / static_cast<double>(f), mean_gx = sum_gx / static_cast<double>(f);
        float* dxr = dx + n * f;
        for (int64_t j = 0; j < f; ++j) {
          const double xhat = (xr[j] - m.mean) * m.rstd;
          dxr[j] = static_cast<float>(m.rstd * (static_cast<double>(dyr[j]) * w[j] - mean_g - xhat * mean_gx));
        }
      }
    });
  }
  // Parameter gradients: features split over the pool, samples summed in
  // order inside each feature.
  float* dw = args.d_params[0].data;
  float* db = args.d_params[1].data;
  std::vector<Moments> ms(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) ms[static_cast<size_t>(n)] = moments(x + n * f, f, eps);
  parallel_for_elements(
      args.ctx.pool, f,
      [&](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) {
          double sw = 0.0, sb = 0.0;
          for (int64_t n = 0; n < batch; ++n) {
            const double g = dy[n * f + j];
            sw += g * (x[n * f + j] - ms[static_cast<size_t>(n)].mean) * ms[static_cast<size_t>(n)].rstd;
            sb += g;
          }
          dw[j] = add_gradient_share(dw[j], sw, args.accumulate);
          db[j] = add_gradient_share(db[j], sb, args.accumulate);
        }
      },
      1024);
}

}  // namespace devmap::cpu
