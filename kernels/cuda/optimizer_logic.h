// The optimizers' per-element updates, host and device: the arithmetic of
// kernels/cpu/optimizers.cpp, operation for operation (compiled without FMA
// contraction on the device, as on the host), so the bits are the CPU's.
#pragma once

#include <math.h>

#include "kernels/cuda/host_device.h"

namespace devmap::cuda {

struct AdamStep {
  float b1, b2, one_minus_b1, one_minus_b2, step_size, inv_sqrt_bc2, eps, wd;
};

// p -= lr * (g + wd * p)
DEVMAP_HD inline void sgd_element(float& p, float g, float lr, float wd) {
  p -= lr * (g + wd * p);
}

// v = momentum * v + (g + wd * p); p -= lr * v
DEVMAP_HD inline void momentum_element(float& p, float g, float& v, float lr, float momentum, float wd) {
  v = momentum * v + (g + wd * p);
  p -= lr * v;
}

// g' = g + wd * p; m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'*g';
// p -= step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps)
DEVMAP_HD inline void adam_element(float& p, float g, float& m, float& v, const AdamStep& s) {
  const float gi = g + s.wd * p;
  m = s.b1 * m + s.one_minus_b1 * gi;
  v = s.b2 * v + s.one_minus_b2 * gi * gi;
  p -= s.step_size * m / (sqrtf(v) * s.inv_sqrt_bc2 + s.eps);
}

}  // namespace devmap::cuda
