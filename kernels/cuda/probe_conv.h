// The probe's convolution: one tiny cuDNN forward convolution on the
// current device, checked against its known result. A cuDNN whose engine
// kernels cannot load or run (a missing or mismatched sub-library, a GPU
// its build has no kernels for) fails here, at the probe, rather than at a
// run's first conv2d. Not yet run on a GPU.
#pragma once

#include <cudnn.h>

#include <string>

namespace devmap::cuda {

// Empty when the convolution ran and gave the expected sums; otherwise
// what failed (the cuDNN or CUDA call and its error, or the wrong result).
std::string probe_convolution_problem(cudnnHandle_t dnn);

}  // namespace devmap::cuda
