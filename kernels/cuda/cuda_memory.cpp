#include "kernels/cuda/cuda_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_copy_queue.h"
#include "kernels/cuda/cuda_timer.h"
#include "kernels/cuda/memory_kernels.h"
#include "kernels/cuda/pinned_host_memory.h"

namespace devmap::cuda {
namespace {

// The pool's size for `requested` (0: the default) against the device's
// free memory now.
uint64_t resolve_limit(CudaDevice& device, uint64_t requested) {
  device.ensure();  // the context and handles exist before free memory is read
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return CudaMemory::pool_limit(device.name(), requested, free, total);
}

constexpr uintptr_t kCublasAlignment = 256;  // cublasSetWorkspace's alignment

bool pinning_disabled_by_env() {
  const char* v = std::getenv("DEVMAP_NO_PIN");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

uint64_t CudaMemory::default_limit(uint64_t free_bytes, uint64_t total_bytes) {
  const uint64_t reserve = std::max(kMinReserveBytes, total_bytes / kReserveDivisor);
  return free_bytes > reserve ? free_bytes - reserve : 0;
}

uint64_t CudaMemory::pool_limit(const std::string& device, uint64_t requested, uint64_t free_bytes,
                                uint64_t total_bytes) {
  const uint64_t most = default_limit(free_bytes, total_bytes);
  if (requested == 0) {
    if (most == 0)
      throw_runtime(device + ": only " + format_bytes(free_bytes) + " of " + format_bytes(total_bytes) +
                    " are free, less than the reserve the GPU worker keeps for CUDA, cuDNN and cuBLAS; "
                    "free the GPU or set a memory_limit");
    return most;
  }
  if (requested > most) {
    const uint64_t reserve = std::max(kMinReserveBytes, total_bytes / kReserveDivisor);
    throw_runtime(device + ": memory_limit " + format_bytes(requested) + " leaves less than the " +
                  format_bytes(reserve) + " the GPU worker keeps free for CUDA, cuDNN and cuBLAS (" +
                  format_bytes(free_bytes) + " of " + format_bytes(total_bytes) + " free); set devices." + device +
                  ".memory_limit to at most " + format_bytes(most) + ", or 0 for that figure");
  }
  return requested;
}

CudaMemory::CudaMemory(std::shared_ptr<CudaDevice> gpu, std::string name, uint64_t limit)
    : DeviceMemory(std::move(name), resolve_limit(*gpu, limit)),
      device_(std::move(gpu)),
      pool_(limit_bytes()),
      pin_(!pinning_disabled_by_env()) {
  void* base = nullptr;
  const cudaError_t e = cudaMalloc(&base, pool_.capacity());
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw_runtime(device() + ": cannot allocate its pool of " + format_bytes(pool_.capacity()) +
                  " of device memory: " + cudaGetErrorString(e) + "; lower its memory_limit");
  }
  base_ = static_cast<char*>(base);
  if (device_->cublas_workspace_bytes() > 0) return;  // another CudaMemory of this device gave it (tests)
  try {
    // cuBLAS's workspace: pool blocks are 64-byte aligned, cuBLAS wants 256.
    cublas_block_ = allocate(kGpuLibraryWorkspaceBytes, "cuBLAS workspace");
    const auto p = reinterpret_cast<uintptr_t>(cublas_block_);
    const uintptr_t aligned = (p + kCublasAlignment - 1) / kCublasAlignment * kCublasAlignment;
    device_->set_cublas_workspace(reinterpret_cast<void*>(aligned), kGpuLibraryWorkspaceBytes - kCublasAlignment);
  } catch (...) {
    (void)cudaFree(base_);
    throw;
  }
}

CudaMemory::~CudaMemory() {
  (void)cudaStreamSynchronize(device_->stream());
  // cuBLAS must not keep a pointer into the pool it is about to lose.
  if (cublas_block_ != nullptr) {
    try {
      device_->set_cublas_workspace(nullptr, 0);
    } catch (...) {  // a broken device: the handle goes with it
    }
    release(cublas_block_, kGpuLibraryWorkspaceBytes);
  }
  for (const auto& [p, bytes] : pinned_) (void)cudaHostUnregister(p);
  if (base_ != nullptr) (void)cudaFree(base_);
}

void* CudaMemory::raw_allocate(size_t bytes) {
  const std::optional<uint64_t> offset = pool_.allocate(bytes);
  if (!offset) return nullptr;
  char* p = base_ + *offset;
  const cudaError_t e = cudaMemsetAsync(p, 0, bytes, device_->stream());
  if (e != cudaSuccess) {
    pool_.release(*offset);  // the caller gets an error, not the block
    check(e, "cudaMemsetAsync (zeroing a new buffer)");
  }
  return p;
}

std::unique_ptr<DeviceTimer> CudaMemory::make_timer() {
  return std::make_unique<CudaTimer>(*device_);
}

std::unique_ptr<DeviceMemory> CudaMemory::make_offload_memory(std::string name) {
  return std::make_unique<PinnedHostMemory>(std::move(name), 0);
}

std::unique_ptr<CopyQueue> CudaMemory::make_copy_queue() {
  return std::make_unique<CudaCopyQueue>(*device_);
}

void CudaMemory::raw_release(void* p) {
  pool_.release(static_cast<uint64_t>(static_cast<char*>(p) - base_));
}

void CudaMemory::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyDefault, device_->stream()),
        "cudaMemcpyAsync (host to device)");
}

void CudaMemory::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDefault, device_->stream()),
        "cudaMemcpyAsync (device to host)");
  device_->synchronize("copying device memory to the host");
}

void CudaMemory::copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, device_->stream()),
        "cudaMemcpyAsync (device to device)");
}

void CudaMemory::fill(float* dst, float value, int64_t count) {
  launch_fill(dst, value, count, device_->stream());
}

void CudaMemory::sum(float* out, std::span<const float* const> parts, int64_t count, ThreadPool& /*pool*/) {
  launch_sum(out, parts, count, device_->stream());
}

void CudaMemory::synchronize() {
  device_->synchronize("a GPU operation");
}

void CudaMemory::register_host(void* p, size_t bytes) {
  if (!pin_ || p == nullptr || bytes == 0 || pinned_.count(p) != 0) return;
  const cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    static bool warned = false;
    if (!warned)
      std::cerr << device() << ": cannot pin " << format_bytes(bytes) << " of shared memory (" << cudaGetErrorString(e)
                << "); its copies stay pageable\n";
    warned = true;
    return;
  }
  pinned_.emplace(p, bytes);
}

void CudaMemory::unregister_host(void* p) {
  auto it = pinned_.find(p);
  if (it == pinned_.end()) return;
  // The device may still be copying from or to it.
  (void)cudaStreamSynchronize(device_->stream());
  (void)cudaHostUnregister(p);
  pinned_.erase(it);
}

uint64_t CudaMemory::pinned_bytes() const {
  uint64_t total = 0;
  for (const auto& [p, bytes] : pinned_) total += bytes;
  return total;
}

std::unique_ptr<DeviceMemory> make_cuda_memory(std::shared_ptr<CudaDevice> device, const std::string& name,
                                               uint64_t limit_bytes) {
  return std::make_unique<CudaMemory>(std::move(device), name, limit_bytes);
}

}  // namespace devmap::cuda
