// The batch-reduced ops on the CPU: softmax_cross_entropy (the loss),
// accuracy (a metric), and argmax (the prediction). Inputs: logits [N, C]
// and, for the first two, labels [N, 1] holding class indices as floats.
// A label that is not an integer in [0, C) throws devmap::Error (kRuntime).
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y[0] = (sum over the N samples of -log softmax(logits)[label]) /
// ctx.batch_total, so the outputs of the micro-batches of one step add up to
// the mean over the step's batch. Computed in double with a stable
// log-sum-exp, samples summed in order.
// Backward: d_logits = dy[0] * (softmax - onehot(label)) / ctx.batch_total
// (overwritten); labels get no gradient.
class SoftmaxCrossEntropyKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

// Forward: y[0] = (number of samples whose first largest logit is the label)
// / ctx.batch_total. Not differentiable.
class AccuracyKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

// Forward: y [N, 1] = the index of each sample's first largest logit, as a
// float. Not differentiable.
class ArgmaxKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
