// PoolAllocator: the bookkeeping under CudaMemory (runs without a GPU).
#include "kernels/cuda/pool_allocator.h"

#include <gtest/gtest.h>

#include <vector>

namespace devmap::cuda {
namespace {

TEST(PoolAllocator, RoundsToTheAlignmentAndFillsFromTheFront) {
  PoolAllocator pool(1024, 64);
  EXPECT_EQ(pool.allocate(1), 0u);
  EXPECT_EQ(pool.allocate(64), 64u);
  EXPECT_EQ(pool.allocate(65), 128u);
  EXPECT_EQ(pool.allocate(0), 256u);  // a zero-byte request still gets a unique block
  EXPECT_EQ(pool.used_bytes(), 64u + 64u + 128u + 64u);
  EXPECT_EQ(pool.allocation_count(), 4u);
}

TEST(PoolAllocator, CapacityIsRoundedDownAndEnforced) {
  PoolAllocator pool(1000, 64);
  EXPECT_EQ(pool.capacity(), 960u);
  EXPECT_FALSE(pool.allocate(961).has_value());
  EXPECT_EQ(pool.allocate(960), 0u);
  EXPECT_FALSE(pool.allocate(1).has_value());
  EXPECT_EQ(pool.release(0), 960u);
  EXPECT_EQ(pool.largest_free_block(), 960u);
}

TEST(PoolAllocator, BestFitPicksTheSmallestHole) {
  PoolAllocator pool(64 * 100, 64);
  const uint64_t a = *pool.allocate(64 * 10), b = *pool.allocate(64), c = *pool.allocate(64 * 3),
                 d = *pool.allocate(64);
  (void)b;
  (void)d;
  pool.release(a);                      // hole of 10 units at 0
  pool.release(c);                      // hole of 3 units at 11
  EXPECT_EQ(pool.allocate(64 * 2), c);  // the 3-unit hole fits best
  EXPECT_EQ(pool.allocate(64 * 4), a);  // then the 10-unit one
}

TEST(PoolAllocator, ReleaseMergesNeighboursIntoOneBlock) {
  PoolAllocator pool(64 * 8, 64);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(*pool.allocate(64));
  EXPECT_FALSE(pool.allocate(64).has_value());
  for (int i : {1, 3, 2, 0, 6, 7, 5, 4}) pool.release(blocks[static_cast<size_t>(i)]);
  EXPECT_EQ(pool.free_block_count(), 1u);
  EXPECT_EQ(pool.largest_free_block(), 64u * 8);
  EXPECT_EQ(pool.used_bytes(), 0u);
  EXPECT_EQ(pool.allocate(64 * 8), 0u);
}

TEST(PoolAllocator, FragmentationIsVisible) {
  PoolAllocator pool(64 * 4, 64);
  const uint64_t a = *pool.allocate(64), b = *pool.allocate(64), c = *pool.allocate(64), d = *pool.allocate(64);
  pool.release(a);
  pool.release(c);
  (void)b;
  (void)d;
  EXPECT_EQ(pool.used_bytes(), 128u);
  EXPECT_EQ(pool.largest_free_block(), 64u);
  EXPECT_FALSE(pool.allocate(128).has_value());  // free bytes suffice, no block does
}

}  // namespace
}  // namespace devmap::cuda
