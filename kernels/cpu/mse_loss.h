// mse_loss on the CPU: prediction and target [N, F...] of the same shape.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y[0] = sum over the N samples' F elements of (p - t)^2 /
// (ctx.batch_total F), in double: each sample's sum in index order, then
// the samples' sums in order (the GPU kernel's order), so the micro-batches of
// one step add up to the mean over the step's batch (PyTorch's
// reduction='mean'). Backward: dp = dy[0] 2 (p - t) / (ctx.batch_total F)
// (overwritten); the target gets no gradient.
class MseLossKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
