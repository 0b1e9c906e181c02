// The shared memory a run creates in /dev/shm: the coordinator's input and
// output slots and one slot ring per cut edge. Planned before anything is
// created, checked against coordinator.shared_memory_limit and against the
// space /dev/shm has free, shown by `coordinator plan` and the memory_plan
// metrics event.
#pragma once

#include <cstdint>
#include <string>

#include "core/plan/partition.h"

namespace devmap {

struct SharedMemoryPlan {
  uint64_t input_slots = 0;   // the input segment
  uint64_t output_slots = 0;  // the output segment (predict)
  uint64_t edge_rings = 0;    // every cut edge's slot ring
  uint64_t limit = 0;         // coordinator.shared_memory_limit; 0: none
  uint64_t total() const { return input_slots + output_slots + edge_rings; }
  // "input slots 12.0 MiB, edge rings 3.1 MiB"
  std::string parts() const;
};

// Where the segments live (Boost.Interprocess on Linux).
inline constexpr const char* kSharedMemoryDir = "/dev/shm";

// The bytes `dir`'s file system has free for an unprivileged writer, or
// -1 when it cannot be asked.
int64_t shared_memory_free(const std::string& dir = kSharedMemoryDir);

// Every edge's slot ring at `max_batch` samples.
// `slots`: each edge's ring depth by edge id (empty: kEdgeSlots each).
uint64_t edge_ring_bytes(const Partition& partition, int64_t max_batch, const std::vector<int>& slots = {});

// {"total_bytes":..,"limit_bytes":..,"input_slots_bytes":..,...}
std::string shared_memory_json(const SharedMemoryPlan& m);

// Throws devmap::Error (kInvalidInput) "CONFIG: the run needs ... of shared
// memory ..." when `m` exceeds its limit or what /dev/shm has free, with
// what to do.
void check_shared_memory(const SharedMemoryPlan& m, const std::string& config_path);

}  // namespace devmap
