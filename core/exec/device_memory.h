// DeviceMemory: the memory of one device as its worker drives it. Every
// tensor, gradient, optimizer state, workspace and staging buffer that the
// executor allocates comes from here, so the device's memory_limit is
// enforced in one place and the peak is measured, not estimated. It also
// carries the few operations the executor performs on device memory by
// itself (copies to and from host memory, fill, summing gradient partials).
//
// The CPU's implementation is HostMemory (core/exec/host_memory.h); the GPU's
// lives in kernels/cuda/ and draws from one pool of cudaMalloc'ed memory.
// All operations are ordered with the device's kernels (one stream per
// worker on a GPU); copy_to_host returns once the data is on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/exec/device_timer.h"
#include "core/graph/tensor.h"
#include "core/plan/device_budget.h"

namespace devmap {

class CopyQueue;
class ThreadPool;

class DeviceMemory {
 public:
  // limit_bytes: 0 means unlimited.
  DeviceMemory(std::string device, uint64_t limit_bytes) : device_(std::move(device)), limit_(limit_bytes) {}
  virtual ~DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Whether the CPU may read and write this memory directly.
  virtual bool host_accessible() const = 0;

  // `bytes` (charged_bytes: rounded up to a cache line) of zeroed memory for `what` ("conv1 output",
  // "workspace"). Throws devmap::Error (kRuntime) naming the device, `what`,
  // the bytes asked for, those in use and the limit when the limit would be
  // exceeded.
  void* allocate(size_t bytes, std::string_view what);
  void release(void* p, size_t bytes);
  // Counts `bytes` of memory that lives elsewhere but belongs to this
  // device's budget (the shared-memory slots a CPU worker writes) against
  // the limit, with allocate's checks and message.
  void charge(uint64_t bytes, std::string_view what);

  uint64_t in_use_bytes() const { return in_use_; }
  uint64_t peak_bytes() const { return peak_; }
  uint64_t limit_bytes() const { return limit_; }
  const std::string& device() const { return device_; }

  // Copies between host memory and this device's memory.
  virtual void copy_from_host(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, size_t bytes) = 0;
  // dst[i] = value for i < count.
  virtual void fill(float* dst, float value, int64_t count) = 0;
  // out[i] = parts[0][i] + parts[1][i] + ... in that order (fixed-order
  // reduction: the same bits on every device kind).
  virtual void sum(float* out, std::span<const float* const> parts, int64_t count, ThreadPool& pool) = 0;
  // Waits until every operation issued so far has completed.
  virtual void synchronize() = 0;
  // Host memory that this device copies to or from often (shared-memory
  // slots): a GPU pins it (cudaHostRegister); the CPU does nothing.
  virtual void register_host(void* /*p*/, size_t /*bytes*/) {}
  virtual void unregister_host(void* /*p*/) {}
  // A timer of this device's work in device time (--profile), or null when
  // its work runs in the calling thread, so the host's clock measures it.
  virtual std::unique_ptr<DeviceTimer> make_timer() { return nullptr; }

  // Offload (core/plan/offload_layout.h). Host memory named `name`, with no
  // limit, for the parameters, gradients and optimizer state this device
  // offloads: the CPU reads and writes it directly, and this device's copy
  // queue copies from and to it. The default is plain HostMemory; a GPU's
  // is pinned.
  virtual std::unique_ptr<DeviceMemory> make_offload_memory(std::string name);
  // The queue that copies between that host memory and this device's
  // memory while the device computes (core/exec/copy_queue.h). The
  // default is a ThreadCopyQueue, for memory the CPU addresses; a device
  // that queues its work (a GPU) overrides it.
  virtual std::unique_ptr<CopyQueue> make_copy_queue();

 protected:
  virtual void* raw_allocate(size_t bytes) = 0;  // zeroed, 64-byte aligned, or nullptr
  virtual void raw_release(void* p) = 0;

 private:
  std::string device_;
  uint64_t limit_ = 0, in_use_ = 0, peak_ = 0;
};

// Owned float storage from a DeviceMemory (the device counterpart of
// Buffer): zeroed on allocation, released on destruction. A borrowed one
// (`borrowed`) views host memory that something else owns and outlives it:
// it is neither charged to a DeviceMemory nor released.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceMemory& memory, int64_t count, std::string_view what);
  static DeviceBuffer borrowed(float* data, int64_t count) {
    DeviceBuffer b;
    b.data_ = data;
    b.count_ = count;
    b.bytes_ = static_cast<size_t>(count) * sizeof(float);
    return b;
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset();
  float* data() const { return data_; }
  int64_t size() const { return count_; }
  TensorView view(Shape shape) const { return TensorView{data_, std::move(shape)}; }

 private:
  DeviceMemory* memory_ = nullptr;
  float* data_ = nullptr;
  int64_t count_ = 0;
  size_t bytes_ = 0;
};

}  // namespace devmap
