// batch_norm on the CPU: input [N, C] or [N, C, H, W]; params weight [C],
// bias [C], then the state running_mean [C], running_var [C] and
// num_batches_tracked [] (core/graph/ops/batch_norm.cpp).
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward, per channel c over its M = N x H x W values:
//   training: mean and biased variance var of the batch, summed in double
//     in a fixed lane order that every CPU path shares (batch_norm.cpp);
//     y = (x - mean) / sqrt(var + eps) * weight + bias, in float; then the
//     state is updated once (PyTorch's (1 - momentum) r + momentum v;
//     running_var from the unbiased variance var M / (M - 1);
//     num_batches_tracked + 1). Throws devmap::Error when M < 2, as
//     PyTorch does.
//   evaluating: the same with running_mean and running_var; no update.
// Backward (training only) recomputes the batch statistics from the input,
// with sum(dy) and sum(dy xhat) in the same pass:
//   dx = rstd weight (dy - mean(dy) - xhat mean(dy xhat))
//   dweight = sum of dy xhat, dbias = sum of dy (overwritten, or added to
//   when accumulating micro-batches); the state gets no gradient.
class BatchNormKernel final : public OpKernel {
 public:
  std::string implementation(const Node& node) const override;
  // ForwardArgs::relu_output applied to each channel's planes as they are written.
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  bool fuses_relu() const override { return true; }
};

}  // namespace devmap::cpu
