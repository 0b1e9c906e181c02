// concat on the GPU.
#pragma once

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

// Same contract as cpu::ConcatKernel: one strided device-to-device copy
// (cudaMemcpy2DAsync, a row per sample) per input, forward and backward.
class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

}  // namespace devmap::cuda
