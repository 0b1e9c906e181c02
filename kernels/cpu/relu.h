// relu on the CPU.
#pragma once

#include <cstdint>
#include <string>

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y = max(x, 0) (NaN propagates). Backward reads only the forward
// OUTPUT (the schema does not keep the input; BackwardArgs.inputs[0].data may
// be null): dx = dy where y > 0, else 0. In-place use (y aliasing x, dx
// aliasing dy) is allowed.
// y[i] = max(y[i], 0) for i < n, in the calling thread, with the forward's
// bits: what a kernel that fuses its relu (ForwardArgs::relu_output) applies
// to the outputs it has just written.
void relu_in_place(float* y, int64_t n);

class ReluKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  std::string implementation(const Node& node) const override;
};

}  // namespace devmap::cpu
