// relu on the GPU: cuDNN activations.
#pragma once

#include <memory>

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cudnn_desc.h"

namespace devmap::cuda {

// Same contract as cpu::ReluKernel. Forward: cudnnActivationForward (RELU,
// NaN propagating): y = max(x, 0). Backward: cudnnActivationBackward with
// the forward OUTPUT standing in for the input it does not keep (for relu,
// y > 0 exactly where x > 0): dx = dy where y > 0, else 0. The tensors are
// described as [1, 1, 1, numel]; in-place use is allowed.
class ReluKernel final : public OpKernel {
 public:
  explicit ReluKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  struct Descriptors {
    ReluDesc relu;
    TensorDesc tensor;
    int64_t numel = -1;
  };
  const Descriptors& descriptors(int64_t numel);

  CudaDevice& device_;
  std::unique_ptr<Descriptors> desc_;  // created on first use
};

}  // namespace devmap::cuda
