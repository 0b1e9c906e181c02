// The closed-form activations on the CPU: gelu, leaky_relu, sigmoid, tanh.
// Elementwise over the whole batch; each element's result depends on that
// element only, so any pool size gives the same bits. In-place use (y
// aliasing x, dx aliasing dy) is allowed.
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward, attribute approximate = none: y = x * Phi(x) = 0.5 x (1 +
// erf(x / sqrt 2)); = tanh: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
// x^3))) (PyTorch's two forms). Backward reads the INPUT: dx = dy * dy/dx
// of the chosen form. Computed in float, erf and tanh in double.
class GeluKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

// Forward: y = x > 0 ? x : negative_slope * x. Backward reads the INPUT:
// dx = x > 0 ? dy : negative_slope * dy.
class LeakyReluKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

// Forward: y = 1 / (1 + exp(-x)). Backward reads the OUTPUT (the input may
// be null): dx = dy * y * (1 - y).
class SigmoidKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

// Forward: y = tanh(x). Backward reads the OUTPUT: dx = dy * (1 - y^2).
class TanhKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
