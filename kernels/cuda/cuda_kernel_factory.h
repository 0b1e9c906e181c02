// The GPU device's kernels: the KernelFactory worker_gpu hands its executor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/exec/kernel.h"
#include "kernels/cuda/conv_plan.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

// Creates the CUDA kernel of every op the CPU factory has (the same names;
// a test checks the two lists agree) and the optimizers. Every kernel runs
// on `device`'s one stream and takes TensorView data as DEVICE pointers
// (and KernelContext::workspace as device memory); results are
// deterministic. Creating kernels touches no GPU: the device initialises on
// the first kernel call (or workspace_bytes() of conv2d).
class CudaKernelFactory : public KernelFactory {
 public:
  explicit CudaKernelFactory(std::shared_ptr<CudaDevice> device);

  // Throws devmap::Error (kInvalidInput) for input/labels and for an op with
  // no GPU kernel, naming the ops it knows.
  std::unique_ptr<OpKernel> make_kernel(const std::string& op) const override;
  std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config) const override;
  // For offloaded state (pinned host memory): host_optimizers.h, with the
  // bits of make_optimizer's kernels.
  std::unique_ptr<OptimizerKernel> make_host_optimizer(const OptimizerConfig& config) const override;

  static std::vector<std::string> op_names();  // sorted
  static bool supports(const std::string& op);

  const std::shared_ptr<CudaDevice>& device() const { return device_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  std::shared_ptr<ConvPlans> conv_plans_;  // shared by every conv2d kernel
};

}  // namespace devmap::cuda
