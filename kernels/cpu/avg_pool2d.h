// avg_pool2d on the CPU: one (sample, channel) plane per task.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y = (sum of the window's pixels inside the plane, added in
// row-major window order from 0.0f) / (kernel*kernel): padding counts as
// zeros in the mean (PyTorch's count_include_pad).
// Backward: dx (overwritten) gathers, for each input pixel, the dy of every
// window that covers it in output order (oh, then ow), from 0.0f, then
// divides by kernel*kernel. The inputs are not needed. The CUDA kernel
// (kernels/cuda/avg_pool_logic.h) does the same operations in the same
// order, so the two give the same bits.
class AvgPool2dKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
