// max_pool2d on the CPU: one (sample, channel) plane per task.
#pragma once

#include <string>

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y = the max of each window; padding counts as -inf (every window
// holds at least one real pixel, the schema guarantees 2*padding <= kernel).
// The chosen element is the first maximum in row-major window order; a NaN
// in the window wins (the first NaN), as in PyTorch.
// Backward: dx (overwritten) gets each dy at its window's chosen element,
// found again from the input (no indices are stored between the passes);
// overlapping windows add in output order. The forward output, when the
// executor passes it (BackwardArgs.output non-null), saves recomputing the
// window maxima; the result is the same bits either way.
// kernel 2, stride 2, padding 0 (non-overlapping windows) has its own loops:
// one pass per plane forward, and backward (when the output is passed) one
// write of every dx element, with the same results as the general code.
// With BackwardArgs::relu_input_gradient (the relu before the pool fused
// into its backward), dx is also +0.0 wherever x is not above zero.
class MaxPool2dKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  std::string implementation(const Node& node) const override;
  bool fuses_relu_gradient() const override { return true; }
};

}  // namespace devmap::cpu
