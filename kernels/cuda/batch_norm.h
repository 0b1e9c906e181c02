// batch_norm on the GPU: hand-written kernels (batch_norm_kernels.cu) with
// the CPU kernel's contract and arithmetic (kernels/cpu/batch_norm.h). Its
// workspace (4 doubles per channel) is the figure its op schema plans.
#pragma once

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

class BatchNormKernel final : public OpKernel {
 public:
  explicit BatchNormKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override { return node.workspace_bytes(batch); }

 private:
  CudaDevice& device_;
};

}  // namespace devmap::cuda
