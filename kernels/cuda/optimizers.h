// Optimizers on the GPU: cpu::make_optimizer's SGD, momentum and Adam (with
// weight decay) as CUDA kernels on the device's stream, with the CPU's
// arithmetic element for element (see optimizer_kernels.h). The ThreadPool
// argument of update() is not used.
#pragma once

#include <memory>

#include "core/exec/kernel.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/optimizer_logic.h"

namespace devmap::cuda {

std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config, CudaDevice& device);

// Adam's constants for `step` (from 1) exactly as cpu::Adam computes them (in
// double, then rounded): the GPU's kernel and the host optimizer of
// offloaded state (host_optimizers.h) take them from here.
AdamStep adam_step_constants(const OptimizerConfig& config, int64_t step);

}  // namespace devmap::cuda
