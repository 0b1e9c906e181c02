#include "kernels/cuda/relu.h"

#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {

const ReluKernel::Descriptors& ReluKernel::descriptors(int64_t numel) {
  if (!desc_) desc_ = std::make_unique<Descriptors>();
  if (desc_->numel != numel) {
    desc_->tensor.set(1, 1, 1, numel);
    desc_->numel = numel;
  }
  return *desc_;
}

void ReluKernel::forward(const ForwardArgs& args) {
  const int64_t n = args.output.numel();
  if (n == 0) return;
  const Descriptors& d = descriptors(n);
  const float one = 1.0f, zero = 0.0f;
  check(cudnnActivationForward(device_.cudnn(), d.relu.get(), &one, d.tensor.get(), args.inputs[0].data, &zero,
                               d.tensor.get(), args.output.data),
        "cudnnActivationForward (relu)");
}

void ReluKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const int64_t n = args.d_output.numel();
  if (n == 0) return;
  const Descriptors& d = descriptors(n);
  const float one = 1.0f, zero = 0.0f;
  const float* y = args.output.data;
  check(cudnnActivationBackward(device_.cudnn(), d.relu.get(), &one, d.tensor.get(), y, d.tensor.get(),
                                args.d_output.data, d.tensor.get(), y, &zero, d.tensor.get(), dx),
        "cudnnActivationBackward (relu)");
}

}  // namespace devmap::cuda
