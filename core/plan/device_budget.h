// The byte rules a device's memory budget counts by: what an allocation
// charges and what the math libraries hold. The executor's DeviceMemory
// (core/exec/device_memory.h) charges by them and the memory plan
// (core/plan/memory_plan.h) predicts by them, so the two agree.
#pragma once

#include <cstdint>

#include "core/base/bytes.h"

namespace devmap {

// Bytes that DeviceMemory::allocate(bytes) charges against the limit.
inline uint64_t charged_bytes(uint64_t bytes) {
  return round_up_to_cache_line(bytes);
}

// The memory a device's math libraries hold for the whole run, taken from
// the device's budget when its DeviceMemory starts, before any tensor:
// cuBLAS's one fixed workspace on a device the host cannot address (a GPU:
// kernels/cuda's CudaMemory allocates it and hands it to cuBLAS; NVIDIA
// recommends 32 MiB on Hopper), nothing on the CPU (OpenBLAS needs none).
inline constexpr uint64_t kGpuLibraryWorkspaceBytes = uint64_t{32} << 20;
inline uint64_t library_workspace_bytes(bool host_accessible) {
  return host_accessible ? 0 : kGpuLibraryWorkspaceBytes;
}

}  // namespace devmap
