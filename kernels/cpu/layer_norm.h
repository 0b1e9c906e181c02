// layer_norm on the CPU: input [N, F...], weight and bias of the per-sample
// shape (F = the per-sample element count).
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward, per sample: mean and biased variance over its F elements (in
// double, index order), xhat = (x - mean) / sqrt(var + eps), y = xhat *
// weight + bias. Backward recomputes mean and variance from the input:
//   dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy weight
//   dweight = sum over samples (in order) of dy xhat, dbias = sum of dy
// (overwritten, or added to when accumulating micro-batches).
class LayerNormKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
