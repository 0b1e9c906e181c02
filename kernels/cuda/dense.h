// dense on the GPU: cuBLAS SGEMM (default math: FP32 FMA, no TF32; atomics
// off) and deterministic bias kernels.
#pragma once

#include "core/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

// Same contract as cpu::DenseKernel: x [N, in], W [units, in], b [units],
// y [N, units], all row-major (cuBLAS sees each as its column-major
// transpose, so no data moves).
// Forward:  y = b broadcast, then y += x W^T (one SGEMM, beta 1), the CPU
//           kernel's order.
// Backward: dx = dy W (overwritten; skipped when null); dW (+)= dy^T x
//           (beta 1 when accumulate); db (+)= the column sums of dy, samples
//           in order in double (launch_column_sums).
// cuBLAS's workspace comes from ctx.workspace (kCublasWorkspaceBytes,
// counted by workspace_bytes), so no library memory lives outside the
// device's pool; with a smaller workspace cuBLAS runs without one.
class DenseKernel final : public OpKernel {
 public:
  static constexpr size_t kCublasWorkspaceBytes = size_t{8} << 20;
  explicit DenseKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override;

 private:
  void use_workspace(const KernelContext& ctx);
  CudaDevice& device_;
};

}  // namespace devmap::cuda
