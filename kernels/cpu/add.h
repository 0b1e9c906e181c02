// add on the CPU.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y = a + b. Backward: da = dy and db = dy (each written whole when
// wanted); the inputs are not kept.
class AddKernel final : public OpKernel {
 public:
  // ForwardArgs::relu_output applied to each range as it is written.
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  bool fuses_relu() const override { return true; }
};

}  // namespace devmap::cpu
