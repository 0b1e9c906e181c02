// The ops a training job recomputes (core/plan/recompute_choice.h), with
// the config's memory limits at the step's batch and each op's forward
// time from the calibration cache (else the FLOPs estimate), and their
// report: one line per op in `coordinator plan` and when a run starts.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "core/graph/graph.h"
#include "core/plan/recompute_choice.h"

namespace devmap {

// Sets Node::recomputed on `graph` (placed) for a training step of `batch`
// samples (`external`: the ops in the coordinator's segments); returns the
// choices. Nothing for inference, nor when no device has a memory_limit
// and no op is pinned `recompute: always`.
std::vector<RecomputePick> plan_recomputes(const Config& config, const RunOptions& options, Graph& graph, bool training,
                                           int64_t batch, const std::vector<int>& external);

// "cpu:0: recomputes relu1 (with bn1): saves 6.12 MiB, costs 0.41 ms a
// step", one per choice; `pinned` ones say "(recompute: always)".
std::vector<std::string> describe_recomputes(const std::vector<RecomputePick>& picks, const Graph& graph);
// The same as a JSON list of objects.
std::string recomputes_json(const std::vector<RecomputePick>& picks, const Graph& graph);

}  // namespace devmap
