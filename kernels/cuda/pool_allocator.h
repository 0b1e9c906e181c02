// PoolAllocator: carves byte ranges out of one region [0, capacity) (the
// GPU worker's single cudaMalloc). Plain host bookkeeping, no CUDA, so it is
// tested everywhere.
//
// Best fit: a request takes the smallest free block that holds it (the
// lowest offset among equals), its front part; a release merges the block
// with free neighbours, so the free list never holds two adjacent blocks.
// Every offset and size is a multiple of `alignment`. O(log n) per call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace devmap::cuda {

class PoolAllocator {
 public:
  // alignment: a power of two; capacity is rounded down to a multiple of it.
  explicit PoolAllocator(uint64_t capacity, uint64_t alignment = 64);

  // The offset of `bytes` (rounded up to the alignment; 0 counts as one
  // unit), or nullopt when no free block is large enough.
  std::optional<uint64_t> allocate(uint64_t bytes);
  // Frees the block allocate() returned at `offset`; returns its size.
  // Releasing an offset that is not allocated is a bug (asserts; ignored
  // in release builds and returns 0).
  uint64_t release(uint64_t offset);

  uint64_t capacity() const { return capacity_; }
  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t largest_free_block() const;
  size_t free_block_count() const { return by_offset_.size(); }
  size_t allocation_count() const { return used_.size(); }

 private:
  void insert_free(uint64_t offset, uint64_t size);
  void erase_free(uint64_t offset, uint64_t size);

  uint64_t capacity_, alignment_, used_bytes_ = 0;
  std::map<uint64_t, uint64_t> by_offset_;           // free: offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // free: (size, offset)
  std::map<uint64_t, uint64_t> used_;                // allocated: offset -> size
};

}  // namespace devmap::cuda
