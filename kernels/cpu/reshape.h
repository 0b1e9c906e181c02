// flatten and reshape on the CPU: the bytes do not change, only the shape.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward copies x to y, backward copies dy to dx (skipped when dx is null);
// a copy onto the same memory is skipped, so the executor may alias them.
// Serves both flatten and reshape (neither keeps its input).
class CopyKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
