// Optimizers on the CPU: elementwise updates of one parameter tensor, split
// over the ThreadPool for large tensors (elementwise, so the bits do not
// depend on the pool size). Hyper-parameters are rounded to float once; the
// per-element arithmetic is float.
#pragma once

#include <memory>

#include "core/exec/kernel.h"

namespace devmap::cpu {

// g' = g + weight_decay * p, then
//   kSgd:      p -= lr * g'                                   (no state)
//   kMomentum: v = momentum * v + g'; p -= lr * v             (state: v)
//   kAdam:     m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
//              p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
//                                                             (state: m, v)
// matching PyTorch's SGD (with momentum, dampening 0, not Nesterov) and Adam
// (not AMSGrad), where t is update()'s 1-based step.
std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config);

}  // namespace devmap::cpu
