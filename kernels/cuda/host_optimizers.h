// Optimizers of a GPU device's offloaded state (core/plan/offload_layout.h):
// SGD, momentum and Adam on the HOST, over parameters, gradients and state
// in the GPU worker's pinned host memory, where that state lives. Each
// element goes through optimizer_logic.h, the per-element code of the GPU's
// own optimizer kernels (optimizer_kernels.cu), compiled for the host
// without FMA contraction as nvcc compiles it for the device (--fmad=false),
// so an offloaded run has the bits of one that is not. The per-step
// constants are those of optimizers.cpp (kernels/cuda).
//
// Why on the host and not the GPU kernel reading mapped host memory: the
// update then touches each offloaded float once from host memory, instead
// of over PCIe from the GPU, and the GPU worker links no CPU kernel library
// (kernels/cpu) for it.
#pragma once

#include <memory>

#include "core/exec/kernel.h"

namespace devmap::cuda {

std::unique_ptr<OptimizerKernel> make_host_optimizer(const OptimizerConfig& config);

}  // namespace devmap::cuda
