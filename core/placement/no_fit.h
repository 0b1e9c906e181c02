// When no placement fits the devices' memory limits: which device lacks
// how much for which ops, and the smallest changes the planner found that
// make a placement fit. Data, and a formatter for the coordinator (which
// prints it and exits 2).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace devmap {

struct DeviceShortfall {
  std::string device;
  uint64_t need = 0, limit = 0;  // at the least memory (lock-step, the smallest micro-batch)
  std::vector<std::pair<std::string, uint64_t>> largest_ops;  // its ops with the most bytes, largest first (3 at most)
};

struct FitSuggestion {
  enum class Kind { kRaiseLimit, kAddDevice };
  Kind kind = Kind::kRaiseLimit;
  std::string device;  // kRaiseLimit: whose limit
  uint64_t bytes = 0;  // the limit to set, or the added device's memory_limit: rounded up to whole MiB
};

struct NoFit {
  int64_t micro_batch = 1;                  // the smallest micro-batch tried
  std::string closest;                      // the placement closest to fitting (describe_placement)
  std::vector<DeviceShortfall> shortfalls;  // its devices over their limits
  // Each makes a placement the planner scored fit (with every other limit as
  // it is), smallest increase first; an added device never has less than
  // the largest op that fits no declared device needs.
  std::vector<FitSuggestion> suggestions;
  std::string largest_op;  // the op needing the most memory by itself, and how much
  uint64_t largest_op_bytes = 0;
  std::string largest_op_part_of;  // the op it is a part of (core/graph/split_op.h); empty: not a part
};

// "no placement fits the devices' memory_limit, even as micro-batches of 1
// sample run lock-step: ...; to fit: raise cpu:0's memory_limit to at
// least 41 MiB, or add a device with a memory_limit of at least 45 MiB".
std::string format_no_fit(const NoFit& no_fit);

}  // namespace devmap
