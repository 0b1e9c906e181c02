// max_pool2d on the GPU.
#pragma once

#include <memory>

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cudnn_desc.h"
#include "kernels/cuda/pool_kernels.h"

namespace devmap::cuda {

// Same contract as cpu::MaxPool2dKernel.
// Forward: cudnnPoolingForward (CUDNN_POOLING_MAX_DETERMINISTIC, NaN
// propagating) when padding is 0, where its maxima are the CPU's values;
// with padding, the hand-written kernel (cuDNN does not document padding as
// -inf).
// Backward: the hand-written gather kernel (pool_kernels.h), because the
// gradient must go to the CPU's choice among tied maxima (ties are common
// after a relu), which cuDNN does not specify; deterministic, no atomics.
class MaxPool2dKernel final : public OpKernel {
 public:
  explicit MaxPool2dKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

  static PoolGeometry geometry(const Node& node, int64_t batch);

 private:
  struct Descriptors {
    PoolDesc pool;
    TensorDesc x, y;
    PoolGeometry geometry;  // what they describe (planes 0: nothing yet)
    int64_t channels = 0;
  };
  CudaDevice& device_;
  std::unique_ptr<Descriptors> desc_;  // created on the first forward with padding 0, set per shape
};

}  // namespace devmap::cuda
