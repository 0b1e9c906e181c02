// conv2d on the GPU: cuDNN convolutions (legacy API, FMA math, the
// deterministic algorithms ConvPlans chose for the shape) and a
// hand-written deterministic bias gradient.
#pragma once

#include <memory>

#include "core/exec/kernel.h"
#include "kernels/cuda/conv_plan.h"

namespace devmap::cuda {

// Same contract as cpu::Conv2dKernel: x [N, C, H, W], W [O, C, K, K] (OIHW),
// b [O], y [N, O, OH, OW].
// Forward:  y = conv(x, W) (cudnnConvolutionForward), then y += b
//           (cudnnAddTensor).
// Backward: db (+)= sums of dy (launch_channel_sums); dW (+)= by
//           cudnnConvolutionBackwardFilter (beta 1 when accumulate); dx =
//           cudnnConvolutionBackwardData (overwritten; skipped when null).
// Each pass runs the algorithm ConvPlans chose within the conv's own planned
// workspace (conv_request: its op schema's figure at the batch, at most
// ConvPlans::kMaxWorkspaceBytes), whatever the device's shared workspace
// holds; workspace_bytes(node, batch) is that figure, the most any chosen
// algorithm uses (so it needs no GPU).
class Conv2dKernel final : public OpKernel {
 public:
  Conv2dKernel(CudaDevice& device, std::shared_ptr<ConvPlans> plans) : device_(device), plans_(std::move(plans)) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override;

 private:
  CudaDevice& device_;
  std::shared_ptr<ConvPlans> plans_;
};

}  // namespace devmap::cuda
