// The size of a cut edge's ring of slots in shared memory: what the
// coordinator allocates (transport/edge_plan.h) and what the memory plan
// charges its producer (core/plan/memory_plan.cpp).
#pragma once

#include <cstdint>

#include "core/base/bytes.h"

namespace devmap {

// One slot: the edge's tensor at the batch, rounded up to a cache line so
// every slot starts on one.
inline uint64_t edge_slot_bytes(uint64_t tensor_bytes) {
  return round_up_to_cache_line(tensor_bytes);
}

// A ring of `slots` slots of `slot_bytes` (edge_slot_bytes) each.
inline uint64_t slot_ring_bytes(uint64_t slot_bytes, uint64_t slots) {
  return slot_bytes * slots;
}

}  // namespace devmap
