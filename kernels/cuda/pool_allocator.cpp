#include "kernels/cuda/pool_allocator.h"

#include <cassert>
#include <iterator>

namespace devmap::cuda {

PoolAllocator::PoolAllocator(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity / alignment * alignment), alignment_(alignment) {
  assert(alignment > 0 && (alignment & (alignment - 1)) == 0);
  if (capacity_ > 0) insert_free(0, capacity_);
}

void PoolAllocator::insert_free(uint64_t offset, uint64_t size) {
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
}

void PoolAllocator::erase_free(uint64_t offset, uint64_t size) {
  by_offset_.erase(offset);
  by_size_.erase({size, offset});
}

std::optional<uint64_t> PoolAllocator::allocate(uint64_t bytes) {
  if (bytes > capacity_) return std::nullopt;
  const uint64_t size = bytes == 0 ? alignment_ : (bytes + alignment_ - 1) / alignment_ * alignment_;
  auto it = by_size_.lower_bound({size, 0});
  if (it == by_size_.end()) return std::nullopt;
  const auto [block_size, offset] = *it;
  erase_free(offset, block_size);
  if (block_size > size) insert_free(offset + size, block_size - size);
  used_.emplace(offset, size);
  used_bytes_ += size;
  return offset;
}

uint64_t PoolAllocator::release(uint64_t offset) {
  auto used = used_.find(offset);
  assert(used != used_.end() && "releasing a block that is not allocated");
  if (used == used_.end()) return 0;
  uint64_t start = offset, size = used->second;
  const uint64_t freed = size;
  used_.erase(used);
  used_bytes_ -= freed;
  // Merge with the free block that ends where this one starts, and with the one that starts where it ends.
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      erase_free(prev->first, prev->second);
    }
  }
  next = by_offset_.find(offset + freed);
  if (next != by_offset_.end()) {
    size += next->second;
    erase_free(next->first, next->second);
  }
  insert_free(start, size);
  return freed;
}

uint64_t PoolAllocator::largest_free_block() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

}  // namespace devmap::cuda
