// concat on the CPU.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: each sample of y is the samples of the inputs one after another
// (along the first per-sample dimension: channels or features). Backward:
// each wanted d_input is its slice of dy (copied; overwritten); the inputs
// are not needed. Pure copies: the same bits on every device.
class ConcatKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
