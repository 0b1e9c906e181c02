// The batch-reduced ops on the GPU: softmax_cross_entropy, accuracy and
// argmax, with the CPU kernels' contracts (kernels/cpu/loss.h): sums in
// double, the loss and the metric divided by ctx.batch_total, the first
// largest logit (a NaN wins), labels that are class indices as floats.
//
// A label that is not an integer in [0, C) throws devmap::Error (kRuntime)
// with the CPU kernel's message. To know, the forward passes of
// softmax_cross_entropy and accuracy wait for the device once (a 4-byte
// read of the first bad sample); the executor reads the loss right after
// anyway. Their workspace is laid out by core/graph/ops/label_op_layout.h, the
// figure their op schemas plan.
#pragma once

#include "core/exec/kernel.h"
#include "core/graph/ops/label_op_layout.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

class SoftmaxCrossEntropyKernel final : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& /*node*/, int64_t batch) const override { return label_op_workspace_bytes(batch); }

 private:
  CudaDevice& device_;
};

class AccuracyKernel final : public OpKernel {
 public:
  explicit AccuracyKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& /*node*/, int64_t batch) const override { return label_op_workspace_bytes(batch); }

 private:
  CudaDevice& device_;
};

class ArgmaxKernel final : public OpKernel {
 public:
  explicit ArgmaxKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  CudaDevice& device_;
};

}  // namespace devmap::cuda
