// avg_pool2d and global_avg_pool on the GPU: hand-written kernels
// (avg_pool_kernels.h) with the CPU kernels' operations and order.
#pragma once

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

// Same contract as cpu::AvgPool2dKernel, the same bits.
class AvgPool2dKernel final : public OpKernel {
 public:
  explicit AvgPool2dKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

// Same contract as cpu::GlobalAvgPoolKernel, the same bits.
class GlobalAvgPoolKernel final : public OpKernel {
 public:
  explicit GlobalAvgPoolKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

}  // namespace devmap::cuda
