// PinnedHostMemory: the host memory of a GPU device's offloaded parameters,
// gradients and optimizer state (DeviceMemory::make_offload_memory). It is
// HostMemory (the CPU reads and writes it; copies are memcpy; no limit
// unless given) whose allocations are page-locked with cudaHostAlloc
// (portable), so the GPU's copy stream (CudaCopyQueue) moves them by DMA,
// asynchronously, while the kernels run. Unverified on a GPU.
#pragma once

#include "core/exec/host_memory.h"

namespace devmap::cuda {

class PinnedHostMemory final : public HostMemory {
 public:
  using HostMemory::HostMemory;

 protected:
  // Zeroed; throws devmap::Error (kRuntime) naming the bytes when the
  // driver cannot lock that much host memory.
  void* raw_allocate(size_t bytes) override;
  void raw_release(void* p) override;
};

}  // namespace devmap::cuda
