// layer_norm and mse_loss on the GPU: hand-written kernels
// (norm_loss_kernels.cu) with the CPU kernels' contracts and arithmetic
// (kernels/cpu/layer_norm.h, kernels/cpu/mse_loss.h). Their workspace is
// the figure their op schemas plan (Node::workspace_bytes).
#pragma once

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

class LayerNormKernel final : public OpKernel {
 public:
  explicit LayerNormKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override { return node.workspace_bytes(batch); }

 private:
  CudaDevice& device_;
};

class MseLossKernel final : public OpKernel {
 public:
  explicit MseLossKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override { return node.workspace_bytes(batch); }

 private:
  CudaDevice& device_;
};

}  // namespace devmap::cuda
