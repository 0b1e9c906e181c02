#include "kernels/cpu/mse_loss.h"

#include <cassert>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

// batch_total x elements per sample: what the sum is divided by.
double denominator(const TensorView& prediction, const KernelContext& ctx) {
  assert(ctx.batch_total > 0 && "the executor sets batch_total for loss ops");
  const int64_t batch = prediction.shape[0];
  const int64_t per_sample = batch > 0 ? prediction.numel() / batch : 0;
  return static_cast<double>(ctx.batch_total) * static_cast<double>(per_sample);
}

}  // namespace

void MseLossKernel::forward(const ForwardArgs& args) {
  const float* p = args.inputs[0].data;
  const float* t = args.inputs[1].data;
  const int64_t n = args.inputs[0].numel(), rows = args.inputs[0].shape[0];
  if (n == 0) {
    args.output.data[0] = 0.0f;
    return;
  }
  const int64_t f = n / rows;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int64_t i = r * f; i < (r + 1) * f; ++i) {
      const double d = static_cast<double>(p[i]) - t[i];
      sum += d * d;
    }
    total += sum;
  }
  args.output.data[0] = static_cast<float>(total / denominator(args.inputs[0], args.ctx));
}

void MseLossKernel::backward(const BackwardArgs& args) {
  float* dp = args.d_inputs[0].data;
  if (dp == nullptr) return;
  const float* p = args.inputs[0].data;
  const float* t = args.inputs[1].data;
  const int64_t n = args.inputs[0].numel();
  if (n == 0) return;
  const double scale = 2.0 * static_cast<double>(args.d_output.data[0]) / denominator(args.inputs[0], args.ctx);
  parallel_for_elements(args.ctx.pool, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dp[i] = static_cast<float>(scale * (static_cast<double>(p[i]) - t[i]));
  });
}

}  // namespace devmap::cpu
