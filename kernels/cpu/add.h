// add on the CPU.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y = a + b. Backward: da = dy and db = dy (each written whole when
// wanted); the inputs are not kept.
class AddKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
