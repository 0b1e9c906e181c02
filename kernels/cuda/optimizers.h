// Optimizers on the GPU: cpu::make_optimizer's SGD, momentum and Adam (with
// weight decay) as CUDA kernels on the device's stream, with the CPU's
// arithmetic element for element (see optimizer_kernels.h). The ThreadPool
// argument of update() is not used.
#pragma once

#include <memory>

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config, CudaDevice& device);

}  // namespace devmap::cuda
