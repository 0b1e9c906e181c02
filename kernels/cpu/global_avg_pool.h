// global_avg_pool on the CPU.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y[n, c] = float(sum_fixed_order(x[n, c, :, :]) / (H*W)) (the sum
// in double, reduce.h's order). Backward: dx[n, c, :, :] = dy[n, c] / (H*W)
// in float (overwritten); the inputs are not needed. The CUDA kernel
// (kernels/cuda/avg_pool_logic.h) does the same operations in the same
// order.
class GlobalAvgPoolKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
