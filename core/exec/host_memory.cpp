#include "core/exec/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/exec/thread_pool.h"

namespace devmap {

void* HostMemory::raw_allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, bytes);  // bytes is a multiple of 64
  if (p) std::memset(p, 0, bytes);
  return p;
}

void HostMemory::raw_release(void* p) {
  std::free(p);
}

void HostMemory::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (device_dst != host_src) std::memcpy(device_dst, host_src, bytes);
}

void HostMemory::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (host_dst != device_src) std::memcpy(host_dst, device_src, bytes);
}

void HostMemory::fill(float* dst, float value, int64_t count) {
  std::fill(dst, dst + count, value);
}

void HostMemory::sum(float* out, std::span<const float* const> parts, int64_t count, ThreadPool& pool) {
  pool.parallel_for(count, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      float s = parts[0][j];
      for (size_t k = 1; k < parts.size(); ++k) s += parts[k][j];
      out[j] = s;
    }
  });
}

}  // namespace devmap
