// add, flatten/reshape and dropout on the GPU.
#pragma once

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

// Same contract as cpu::AddKernel: y = a + b; backward copies dy to each
// wanted input gradient (cudaMemcpyAsync, skipped onto the same memory).
class AddKernel final : public OpKernel {
 public:
  explicit AddKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

// Same contract as cpu::CopyKernel (flatten and reshape): a device-to-device
// copy, skipped when source and destination are the same memory.
class CopyKernel final : public OpKernel {
 public:
  explicit CopyKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

// Same contract as cpu::DropoutKernel, with the same mask (the same Philox
// counters, so a GPU and a CPU worker drop the same elements): training
// y = x * mask * scale, evaluation y = x; backward dx = dy * mask * scale
// (or dy), the mask recomputed from (seed, name, step, sample offset).
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  void apply(const Node& node, const KernelContext& ctx, const float* src, float* dst, int64_t n);
  CudaDevice& device_;
};

}  // namespace devmap::cuda
