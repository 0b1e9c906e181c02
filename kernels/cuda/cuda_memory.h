// CudaMemory: the GPU's DeviceMemory (contract in core/exec/device_memory.h).
//
// One pool: the constructor takes the whole budget from the device in a
// single cudaMalloc and PoolAllocator carves it (best fit, 64-byte units),
// so the device never allocates during a step and memory_limit is the
// device memory the worker's tensors may use, exactly. Without a limit the
// pool is the free memory less a reserve (default_limit) for what lives
// outside it: the CUDA context's own allocations, cuDNN's and cuBLAS's
// handles and the kernels' code loaded on first use.
//
// When it starts it also takes cuBLAS's one workspace from the pool
// (kGpuLibraryWorkspaceBytes, core/plan/device_budget.h: the figure the memory
// plan counts) and hands it to the device's cuBLAS handle for every call,
// so cuBLAS's choice never depends on the other ops of the device and no
// library memory lives outside the pool. A worker makes one CudaMemory per
// device; a further one on the same device (tests) leaves cuBLAS the first
// one's workspace and takes none.
//
// Every operation runs on the device's one stream (CudaDevice), in call
// order with the kernels: copy_from_host and fill return before the device
// has done them (a pinned host source must stay unchanged until the stream
// reaches the copy: the next synchronize() or copy_to_host()), copy_to_host
// and synchronize return once everything issued so far is done. The copies
// use cudaMemcpyDefault, so their "device" side may also be host memory
// the GPU addresses (an offloaded parameter's pinned memory).
//
// Offload: make_offload_memory() is PinnedHostMemory and make_copy_queue()
// a CudaCopyQueue on this device (a copy stream of its own).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/exec/device_memory.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/pool_allocator.h"

namespace devmap::cuda {

class CudaMemory final : public DeviceMemory {
 public:
  // The reserve left outside the pool when no limit is given: the larger
  // of kMinReserveBytes and 1/kReserveDivisor (5%) of the device's total
  // memory.
  static constexpr uint64_t kMinReserveBytes = uint64_t{1} << 30;
  static constexpr uint64_t kReserveDivisor = 20;
  static uint64_t default_limit(uint64_t free_bytes, uint64_t total_bytes);
  // The pool's size on `device` for a `requested` memory_limit (0: the
  // default_limit) with `free_bytes` of `total_bytes` free: an explicit
  // limit must leave the same reserve free, for the CUDA context, cuDNN's
  // and cuBLAS's handles and the kernels they load on first use (outside
  // the pool). Throws devmap::Error (kRuntime) naming the limit, the free
  // memory, the reserve and the most the device allows.
  static uint64_t pool_limit(const std::string& device, uint64_t requested, uint64_t free_bytes, uint64_t total_bytes);

  // Takes `limit` bytes (0: default_limit() of the device's memory now)
  // from `gpu`. Throws devmap::Error when the device has no usable GPU, when
  // the limit leaves less than the reserve free (pool_limit), or when
  // cudaMalloc fails.
  CudaMemory(std::shared_ptr<CudaDevice> gpu, std::string name, uint64_t limit);
  ~CudaMemory() override;

  bool host_accessible() const override { return false; }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  // Copies between two device buffers of this pool (on the stream).
  void copy_on_device(void* dst, const void* src, size_t bytes);
  void fill(float* dst, float value, int64_t count) override;
  void sum(float* out, std::span<const float* const> parts, int64_t count, ThreadPool& pool) override;
  void synchronize() override;

  // Pins host memory with cudaHostRegister (portable), so that copies from
  // and to it are direct DMA; no-op when DEVMAP_NO_PIN=1 is set. Pinning
  // the same pointer twice is a no-op; a pin the driver refuses is
  // reported once on stderr and the memory stays pageable (copies still
  // work, slower).
  void register_host(void* p, size_t bytes) override;
  void unregister_host(void* p) override;
  bool pinning_enabled() const { return pin_; }
  // CUDA events on the stream: per-op device time for --profile.
  std::unique_ptr<DeviceTimer> make_timer() override;
  std::unique_ptr<DeviceMemory> make_offload_memory(std::string name) override;
  std::unique_ptr<CopyQueue> make_copy_queue() override;
  uint64_t pinned_bytes() const;

  CudaDevice& cuda_device() { return *device_; }
  // The pool's region, for tests.
  const void* pool_base() const { return base_; }
  uint64_t pool_bytes() const { return pool_.capacity(); }

 protected:
  void* raw_allocate(size_t bytes) override;
  void raw_release(void* p) override;

 private:
  std::shared_ptr<CudaDevice> device_;
  char* base_ = nullptr;
  PoolAllocator pool_;
  bool pin_ = true;
  std::map<void*, size_t> pinned_;  // registered host ranges
  void* cublas_block_ = nullptr;    // cuBLAS's workspace: a block of the pool
};

// The factory worker_gpu hands WorkerRuntime::make_memory: "gpu:N" and the
// device's memory_limit (0: default_limit()).
std::unique_ptr<DeviceMemory> make_cuda_memory(std::shared_ptr<CudaDevice> device, const std::string& name,
                                               uint64_t limit_bytes);

}  // namespace devmap::cuda
