// softmax on the CPU, over the features of each sample: input [N, K].
#pragma once

#include "core/exec/kernel.h"

namespace devmap::cpu {

// Forward: y[n, k] = exp(x[n, k] - m) / sum_j exp(x[n, j] - m), m the
// row's maximum, the sum in double in index order. Backward reads the
// OUTPUT: dx[n, k] = y[n, k] (dy[n, k] - sum_j dy[n, j] y[n, j]).
class SoftmaxKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace devmap::cpu
