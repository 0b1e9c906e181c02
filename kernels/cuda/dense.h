// dense on the GPU: cuBLAS SGEMM (default math: FP32 FMA, no TF32; atomics
// off) and deterministic bias kernels.
#pragma once

#include "core/exec/kernel.h"
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
// cuBLAS works in the one fixed workspace CudaMemory gave it when the
// device started (CudaDevice::set_cublas_workspace, counted by the memory
// plan), never in the ops' shared workspace: dense plans none of its own,
// and its GEMMs do not depend on which other ops share the device. A
// device without that workspace is refused (a worker bug).
class DenseKernel final : public OpKernel {
 public:
  explicit DenseKernel(CudaDevice& device) : device_(device) {}
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  void require_workspace(const Node& node);
  CudaDevice& device_;
};

}  // namespace devmap::cuda
