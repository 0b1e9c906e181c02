// HostMemory: the CPU device's DeviceMemory. Plain 64-byte aligned heap
// memory, counted against the device's memory_limit; copies are memcpy.
#pragma once

#include "core/exec/device_memory.h"

namespace devmap {

class HostMemory : public DeviceMemory {
 public:
  using DeviceMemory::DeviceMemory;
  bool host_accessible() const override { return true; }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  void fill(float* dst, float value, int64_t count) override;
  void sum(float* out, std::span<const float* const> parts, int64_t count, ThreadPool& pool) override;
  void synchronize() override {}

 protected:
  void* raw_allocate(size_t bytes) override;
  void raw_release(void* p) override;
};

}  // namespace devmap
