// The one-thread kernel probe_gpu() launches to learn whether this build has
// code the device can run.
#pragma once

#include <cuda_runtime_api.h>

namespace devmap::cuda {

// Launches a kernel that writes 42 to *out (device memory) on the default
// stream, waits for it and returns the first error (cudaSuccess when the
// value arrived).
cudaError_t run_probe_kernel(int* out_device);

}  // namespace devmap::cuda
