#include "core/exec/device_memory.h"

#include <cassert>

#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "core/exec/host_memory.h"
#include "core/exec/thread_copy_queue.h"

namespace devmap {

namespace {

[[noreturn]] void over_limit(const std::string& device, uint64_t bytes, std::string_view what, uint64_t in_use,
                             uint64_t limit) {
  throw_runtime(device + ": " + std::string(what) + " needs " + format_bytes(bytes) + " more, but " +
                format_bytes(in_use) + " of its memory_limit of " + format_bytes(limit) + " are in use");
}

}  // namespace

std::unique_ptr<DeviceMemory> DeviceMemory::make_offload_memory(std::string name) {
  return std::make_unique<HostMemory>(std::move(name), 0);
}

std::unique_ptr<CopyQueue> DeviceMemory::make_copy_queue() {
  assert(host_accessible() && "a device that queues its work makes its own copy queue");
  return std::make_unique<ThreadCopyQueue>(*this);
}

void DeviceMemory::charge(uint64_t bytes, std::string_view what) {
  if (limit_ > 0 && in_use_ + bytes > limit_) over_limit(device_, bytes, what, in_use_, limit_);
  in_use_ += bytes;
  if (in_use_ > peak_) peak_ = in_use_;
}

void* DeviceMemory::allocate(size_t bytes, std::string_view what) {
  uint64_t charged = charged_bytes(bytes);
  if (charged == 0) return nullptr;
  if (limit_ > 0 && in_use_ + charged > limit_) over_limit(device_, charged, what, in_use_, limit_);
  void* p = raw_allocate(charged);
  if (!p)
    throw_runtime(device_ + ": out of memory allocating " + format_bytes(charged) + " for " + std::string(what) + " (" +
                  format_bytes(in_use_) + " in use)");
  in_use_ += charged;
  if (in_use_ > peak_) peak_ = in_use_;
  return p;
}

void DeviceMemory::release(void* p, size_t bytes) {
  if (!p) return;
  raw_release(p);
  in_use_ -= charged_bytes(bytes);
}

DeviceBuffer::DeviceBuffer(DeviceMemory& memory, int64_t count, std::string_view what)
    : memory_(&memory), count_(count), bytes_(static_cast<size_t>(count) * sizeof(float)) {
  data_ = static_cast<float*>(memory.allocate(bytes_, what));
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    memory_ = o.memory_;
    data_ = o.data_;
    count_ = o.count_;
    bytes_ = o.bytes_;
    o.memory_ = nullptr;
    o.data_ = nullptr;
    o.count_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (memory_ && data_) memory_->release(data_, bytes_);
  memory_ = nullptr;
  data_ = nullptr;
  count_ = 0;
  bytes_ = 0;
}

}  // namespace devmap
