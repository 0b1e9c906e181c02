#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {

void SoftmaxKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.output.shape[0], k = args.output.numel() / std::max<int64_t>(batch, 1);
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  parallel_for_rows(args.ctx.pool, batch, k, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* xr = x + n * k;
      float* yr = y + n * k;
      const double m = *std::max_element(xr, xr + k);
      double sum = 0.0;
      for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(xr[j]) - m);
      for (int64_t j = 0; j < k; ++j) yr[j] = static_cast<float>(std::exp(static_cast<double>(xr[j]) - m) / sum);
    }
  });
}

void SoftmaxKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const int64_t batch = args.d_output.shape[0], k = args.d_output.numel() / std::max<int64_t>(batch, 1);
  const float* y = args.output.data;
  const float* dy = args.d_output.data;
  assert(y != nullptr && "softmax keeps its output for backward");
  parallel_for_rows(args.ctx.pool, batch, k, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* yr = y + n * k;
      const float* dyr = dy + n * k;
      double dot = 0.0;
      for (int64_t j = 0; j < k; ++j) dot += static_cast<double>(dyr[j]) * yr[j];
      float* dxr = dx + n * k;
      for (int64_t j = 0; j < k; ++j) dxr[j] = static_cast<float>(yr[j] * (dyr[j] - dot));
    }
  });
}

}  // namespace devmap::cpu
