// Which ops the plan recomputes (core/plan/recompute.h). Every op the
// config pins `recompute: always` is; then, while a device's plan exceeds
// its memory_limit, one more op on it whose output the backward pass reads
// (so it is kept across the gap between the passes), the cheapest in
// recompute seconds per byte of its output first. Recomputing it also
// recomputes the inputs it reads that are not kept (a batch_norm before a
// relu), and costs their forwards too. An op is kept as a choice only if
// its device's planned total goes down; the choice stops when every device
// fits or no candidate is left (micro-batches do the rest). Ops pinned
// `never` are never recomputed, not even as another's input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/plan/memory_plan.h"

namespace devmap {

struct RecomputePick {
  int node = -1;          // the op whose output is no longer kept
  std::vector<int> with;  // the inputs recomputed for it, in the order they run
  std::string device;
  bool pinned = false;      // recompute: always
  int64_t saved_bytes = 0;  // its device's planned total before minus after (negative: it costs memory)
  double seconds = 0;       // the forwards it adds to a step (its own and `with`'s)
};

struct RecomputeRequest {
  // The memory plan of the graph with its current Node::recomputed flags,
  // at the step's batch: one entry per device, with its limit.
  std::function<MemoryPlan(const Graph&)> plan;
  // Seconds of one forward of op `node` on its device at the step's batch.
  std::function<double(int node)> forward_seconds;
  // false: only the ops pinned `recompute: always` (with the inputs they
  // need recomputed); the plan chooses none of its own (train.recompute:
  // never).
  bool choose = true;
};

// Sets Node::recomputed in `graph` (placed; training) and returns the
// choices in the order made. Throws devmap::Error (kInvalidInput, at the
// op's config line) for `recompute: always` on an op that cannot be
// recomputed (an input, a loss or metric, or one that reads or feeds
// another device).
std::vector<RecomputePick> choose_recomputes(Graph& graph, const RecomputeRequest& request);

}  // namespace devmap
