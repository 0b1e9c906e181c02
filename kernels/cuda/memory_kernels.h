// The elementwise device operations CudaMemory performs for the executor.
// Each enqueues one or more kernels on `stream` and checks the launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

namespace devmap::cuda {

// dst[i] = value for i < count.
void launch_fill(float* dst, float value, int64_t count, cudaStream_t stream);

// out[i] = parts[0][i] + parts[1][i] + ... added left to right in float, the
// order HostMemory::sum uses, so the bits are the same. `out` may be the
// first part and overlaps no other (checked: devmap::Error otherwise; see
// sum_logic.h). Any number of parts (>= 1).
void launch_sum(float* out, std::span<const float* const> parts, int64_t count, cudaStream_t stream);

}  // namespace devmap::cuda
