// Arena: places buffers with known lifetimes at offsets in one block of
// memory, so that buffers never alive at the same time may share bytes
// (tinygrad's memory planner, XLA's buffer assignment). A lifetime is the
// inclusive range [first, last] of positions in a device's step at which
// the buffer is written or read; two buffers overlap in time when their
// ranges share a position, and then never overlap in memory.
//
// The placement is a deterministic greedy: buffers in order of size (largest
// first; ties by first use, then by index), each at the lowest 64-byte
// aligned offset where it overlaps no already placed buffer that it
// overlaps in time (first fit). The same list always gives the same arena.
#pragma once

#include <cstdint>
#include <vector>

namespace devmap {

inline constexpr uint64_t kArenaAlignment = 64;

struct ArenaBuffer {
  uint64_t bytes = 0;
  int first = 0, last = 0;  // inclusive positions in the step; first <= last
};

struct ArenaLayout {
  std::vector<uint64_t> offsets;  // per buffer, in the order given; multiples of kArenaAlignment
  uint64_t bytes = 0;             // the arena: the end of the highest buffer (a multiple of kArenaAlignment)
  // The largest total of (aligned) bytes alive at one position: no placement
  // can be smaller.
  uint64_t lower_bound = 0;
};

ArenaLayout place_buffers(const std::vector<ArenaBuffer>& buffers);

}  // namespace devmap
