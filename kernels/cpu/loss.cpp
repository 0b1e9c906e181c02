#include "kernels/cpu/loss.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/cpu/labels.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

// max and log(sum(exp(z - max))) of one row of logits, in double.
struct LogSumExp {
  double max, log_sum;
};

LogSumExp log_sum_exp(const float* z, int64_t classes) {
  double m = *std::max_element(z, z + classes);
  double sum = 0.0;
  for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - m);
  return {m, std::log(sum)};
}

double batch_total(const KernelContext& ctx) {
  assert(ctx.batch_total > 0 && "the executor sets batch_total for loss and metric ops");
  return static_cast<double>(ctx.batch_total);
}

}  // namespace

void SoftmaxCrossEntropyKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  const float* logits = args.inputs[0].data;
  const float* labels = args.inputs[1].data;
  double total = 0.0;
  for (int64_t n = 0; n < batch; ++n) {
    const float* z = logits + n * classes;
    const int64_t label = label_index(args.node, labels[n], args.ctx.sample_offset + n, classes);
    const LogSumExp lse = log_sum_exp(z, classes);
    total += lse.log_sum + lse.max - static_cast<double>(z[label]);
  }
  args.output.data[0] = static_cast<float>(total / batch_total(args.ctx));
}

void SoftmaxCrossEntropyKernel::backward(const BackwardArgs& args) {
  float* dz = args.d_inputs[0].data;
  if (dz == nullptr) return;
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  const float* logits = args.inputs[0].data;
  const float* labels = args.inputs[1].data;
  const double scale = static_cast<double>(args.d_output.data[0]) / batch_total(args.ctx);
  // Validate every label before writing (so an error leaves no half-written gradient).
  for (int64_t n = 0; n < batch; ++n) label_index(args.node, labels[n], args.ctx.sample_offset + n, classes);
  parallel_for_rows(args.ctx.pool, batch, classes, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* z = logits + n * classes;
      float* d = dz + n * classes;
      const int64_t label = static_cast<int64_t>(labels[n]);
      const LogSumExp lse = log_sum_exp(z, classes);
      for (int64_t c = 0; c < classes; ++c) {
        const double p = std::exp(static_cast<double>(z[c]) - lse.max - lse.log_sum);
        d[c] = static_cast<float>(scale * (p - (c == label ? 1.0 : 0.0)));
      }
    }
  });
}

void AccuracyKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  const float* logits = args.inputs[0].data;
  const float* labels = args.inputs[1].data;
  int64_t correct = 0;
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t label = label_index(args.node, labels[n], args.ctx.sample_offset + n, classes);
    if (first_argmax(logits + n * classes, classes) == label) ++correct;
  }
  args.output.data[0] = static_cast<float>(static_cast<double>(correct) / batch_total(args.ctx));
}

void AccuracyKernel::backward(const BackwardArgs&) {
  assert(false && "accuracy is not differentiable");
}

void ArgmaxKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  const float* logits = args.inputs[0].data;
  float* y = args.output.data;
  for (int64_t n = 0; n < batch; ++n) y[n] = static_cast<float>(first_argmax(logits + n * classes, classes));
}

void ArgmaxKernel::backward(const BackwardArgs&) {
  assert(false && "argmax is not differentiable");
}

}  // namespace devmap::cpu
