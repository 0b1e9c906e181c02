// The CPU device's kernels: the KernelFactory worker_cpu hands its executor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/exec/kernel.h"

namespace devmap {

// Creates the CPU (OpenBLAS) kernel of every computing op. The ops that the
// executor feeds itself (input, labels) have no kernel. Kernels are stateless
// between calls and may be shared by nodes of the same op; each reads its
// sizes from the Node it is called with.
//
// All parallelism, GEMMs included, comes from the ThreadPool in
// KernelContext; OpenBLAS computes in the calling thread
// (cpu::pin_blas_to_one_thread, kernels/cpu/blas.h) and each kernel hands
// disjoint GEMMs to the pool's threads. Kernels split their work into parts
// fixed by the shapes, not by the pool size, so results are
// bit-reproducible for any pool size (see each kernel's header).
class CpuKernelFactory : public KernelFactory {
 public:
  // Throws devmap::Error (kInvalidInput) for input/labels and for an op with
  // no CPU kernel, naming the ops it knows.
  std::unique_ptr<OpKernel> make_kernel(const std::string& op) const override;
  // sgd, momentum, adam: see kernels/cpu/optimizers.h.
  std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config) const override;

  // The ops with a CPU kernel, sorted.
  static std::vector<std::string> op_names();
  static bool supports(const std::string& op);
};

}  // namespace devmap
