// What the coordinator process itself holds for a job, beside its workers'
// memory plan: the data sets a training job keeps loaded, the reader of a
// prediction's input (one batch at a time), and the shared-memory input and
// output slots it writes and reads. Checked against coordinator.memory_limit
// before anything starts; shown by `coordinator plan` and the memory_plan
// metrics event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace devmap {

struct CoordinatorMemory {
  uint64_t datasets = 0;      // training and test labels and visiting orders (train jobs; images stay in files)
  uint64_t input_reader = 0;  // predict: one batch of the input file as read
  uint64_t input_slots = 0;   // the input segment
  uint64_t output_slots = 0;  // the output segment (predict)
  uint64_t limit = 0;         // coordinator.memory_limit; 0: none
  uint64_t total() const { return datasets + input_reader + input_slots + output_slots; }
  bool fits() const { return limit == 0 || total() <= limit; }
  // "training and test labels and orders 627.2 KiB, input slots 392.5 KiB"
  std::string parts() const;
};

// {"total_bytes":..,"limit_bytes":..,"datasets_bytes":..,...}: for the
// memory_plan metrics event and `plan --json`.
std::string coordinator_memory_json(const CoordinatorMemory& m);

// Throws devmap::Error (kInvalidInput) "CONFIG: the coordinator needs ..."
// when `m` does not fit its limit.
void check_coordinator_memory(const CoordinatorMemory& m, const std::string& config_path);

}  // namespace devmap
