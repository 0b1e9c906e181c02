// The placement planner: a pure function from (graph, pins, devices with
// their costs and memory budgets, schedule choices) to the placement of
// every op, the micro-batches and pipeline schedule of a step, and the
// predicted step time, with what the plan rests on (each device's busy and
// idle time, the bytes crossing devices, each device's memory against its
// limit) and the runners-up it rejected, or, when nothing fits, what would.
//
// How the coordinator uses it:
//   PlacementRequest r;                 // core/placement/request.h
//   r.graph = &graph; r.training = ...; r.outputs = {prediction op};
//   r.pins[i] = the device the config gave op i ("" for `auto`);
//   r.devices = every declared device (name, kind -> host_memory,
//               memory_limit, threads, DeviceRates from calibration);
//   r.measured = an OpTimes over the calibration cache (or null);
//   r.links = the calibrated a + bytes/b of each ordered device pair;
//   r.batch = train.batch_size; r.optimizer_states = ...;
//   PlacementResult res = plan_placement(r);
//   if (!res.fits) { std::cerr << format_no_fit(res.no_fit); exit 2; }
//   graph.node(i).device = res.plan.placement[i] for every op (fed ops:
//   leave as they are); train.micro_batches = res.plan.choice.micro_batches;
//   train.pipeline = res.plan.choice.kind.
// Every figure comes from PlacementScorer (core/placement/scorer.h), which
// uses the same partition, schedule simulation and memory plan as a run:
// the memory a plan reports is what the run will plan, and it fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/placement/no_fit.h"
#include "core/placement/request.h"
#include "core/placement/scorer.h"
#include "core/plan/memory_plan.h"

namespace devmap {

// One device of the chosen plan, per step.
struct DeviceForecast {
  std::string device;
  double busy_seconds = 0, idle_seconds = 0;    // idle: the step's time less busy
  uint64_t memory_bytes = 0, memory_limit = 0;  // as the memory plan counts them; limit 0: none
  std::vector<std::string> ops;                 // placed here, in node order
};

// A tensor that crosses devices each step (forward activations and
// backward gradients), with its bytes per step (all micro-batches, every
// consumer).
struct CrossingTensor {
  std::string tensor;  // "pool2", "pool2@grad"
  std::string producer;
  std::vector<std::string> consumers;
  uint64_t bytes_per_step = 0;
};

// A candidate the planner did not take, and why.
struct RejectedPlan {
  enum class Why { kSlower, kOverBudget };
  std::vector<std::string> placement;  // per node, as PlacementPlan::placement
  ScheduleChoice choice;               // its step time is infinite when even its least memory is over
  Why why = Why::kSlower;
  double slower_fraction = 0;    // kSlower: (its step time - the plan's) / the plan's
  std::string device;            // kOverBudget: the device over its limit by the most,
  uint64_t need = 0, limit = 0;  // with what it needs and its limit
  // "slower by 12.5%", "over the budget of cpu:1 by 3.20 MiB".
  std::string reason() const;
};

struct PlacementPlan {
  std::vector<std::string> placement;   // per node: its device; "" for fed ops (inputs, labels)
  ScheduleChoice choice;                // micro-batches, their size, schedule, predicted step time
  std::vector<DeviceForecast> devices;  // the devices the placement uses, sorted by name
  uint64_t bytes_per_step = 0;          // crossing devices, summed over `crossings`
  std::vector<CrossingTensor> crossings;
  MemoryPlan memory;                   // every used device at choice.micro_batch, as the run plans it
  std::vector<std::string> estimated;  // "conv1 on cpu:1": op times from the analytical estimate, not measured
  // Faster choices over a budget (by time), placements over a budget at
  // any micro-batch (by bytes over), slower placements (by time): at most
  // PlacementRequest::runners_up of each.
  std::vector<RejectedPlan> runners_up;
  std::string method;   // "chain" or "heuristic" (core/placement/search.h)
  bool exact = false;   // the chain optimum over contiguous placements
  int evaluations = 0;  // placements scored
};

struct PlacementResult {
  bool fits = false;
  PlacementPlan plan;  // when fits
  NoFit no_fit;        // when not
};

// Throws devmap::Error (kInvalidInput) only for a request it cannot read
// (see PlacementScorer); a placement that does not fit is a result.
PlacementResult plan_placement(const PlacementRequest& request);

// "cpu:0 conv1..pool2, cpu:1 flat..logits": the computed ops by device, in
// node order, runs of consecutive ops shortened.
std::string describe_placement(const Graph& graph, const std::vector<std::string>& placement);

}  // namespace devmap
