// How a kernel adds its share of a parameter gradient to the gradient
// buffer, on the CPU and on the GPU alike (nvcc compiles it for the device
// too): the share, summed in double, is rounded to float first, then added
// in float when `accumulate` (a later gradient chunk or micro-batch), or
// stored. One rounding rule for both devices, so a step cut into chunks
// gives the same bits on each: float(held + share) would round once, not
// twice, and differ in the last bit.
#pragma once

#include "kernels/cuda/host_device.h"

namespace devmap {

DEVMAP_HD inline float add_gradient_share(float held, double share, bool accumulate) {
  const float rounded = static_cast<float>(share);
  return accumulate ? held + rounded : rounded;
}

}  // namespace devmap
