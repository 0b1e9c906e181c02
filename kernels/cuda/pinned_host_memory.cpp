#include "kernels/cuda/pinned_host_memory.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "core/base/error.h"
#include "core/base/format_bytes.h"

namespace devmap::cuda {

void* PinnedHostMemory::raw_allocate(size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);  // page aligned
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw_runtime(device() + ": cannot pin " + format_bytes(bytes) + " of host memory for offloaded state (" +
                  cudaGetErrorString(e) + " after " + format_bytes(in_use_bytes()) +
                  "); free host memory, or offload from fewer devices");
  }
  std::memset(p, 0, bytes);
  return p;
}

void PinnedHostMemory::raw_release(void* p) {
  (void)cudaFreeHost(p);
}

}  // namespace devmap::cuda
