// The words for round trips (core/plan/round_trips.h): which ops sit apart
// from every op they exchange tensors with, what that moves, and the map
// that avoids it. `coordinator plan` prints them in the plan, and a run at
// its start as a warning.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/graph/graph.h"
#include "core/plan/round_trips.h"

namespace devmap {

// Nothing when `trips` has no op; else, each line starting with `prefix`:
//   round trips: relu3, loss and acc run on cpu:0, but every op they exchange tensors with runs on cpu:1
//     fc1 (cpu:1) -> relu3 (cpu:0) -> logits (cpu:1)
//     logits (cpu:1) -> loss (cpu:0)
//     logits (cpu:1) -> acc (cpu:0)
//     8 cut edges move 2.54 MiB a step; with relu3, loss and acc placed beside their neighbours, 2 cut edges would
//     move 1.53 MiB to place relu3, loss and acc on cpu:1: give each `device: cpu:1`, or add them to a device_map.place
//     rule for cpu:1
// naming the ops RoundTrips::moves moves.
// `batch`: the samples of a step.
void print_round_trips(const RoundTrips& trips, const Graph& graph, int64_t batch, const std::string& prefix,
                       std::ostream& os);

// The same for `plan --json`: a JSON array, one object per stranded op
// ({"op","device","neighbours_device","inputs":[..],"consumers":[..],"move":bool}),
// and the cut edges and bytes a step now and with the moves made:
// {"ops":[..],"edges":8,"bytes_per_step":..,"edges_after":2,"bytes_per_step_after":..}.
std::string round_trips_json(const RoundTrips& trips, const Graph& graph, int64_t batch);

}  // namespace devmap
