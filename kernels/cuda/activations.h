// gelu, leaky_relu, sigmoid, tanh and softmax on the GPU: hand-written
// kernels (activation_kernels.cu) with the CPU kernels' contracts
// (kernels/cpu/activations.h, kernels/cpu/softmax.h) and formulas; CUDA's
// erf, exp and tanh may differ from the C library's in the last bits.
#pragma once

#include "core/exec/kernel.h"
#include "kernels/cuda/activation_kernels.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

// One of the closed-form activations, chosen from the node's op name (and
// gelu's `approximate`).
class ActivationKernel final : public OpKernel {
 public:
  explicit ActivationKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

class SoftmaxKernel final : public OpKernel {
 public:
  explicit SoftmaxKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

}  // namespace devmap::cuda
