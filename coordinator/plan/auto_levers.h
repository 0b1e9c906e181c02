// `auto` placement's levers beyond placement, micro-batches and pipelines,
// pulled when no placement fits the config as written: the op that needs
// the most memory split across devices (auto_split.h), and offload of
// parameters to host memory (`offload: parameters`) on the CPU devices
// with a memory_limit whose `offload` the config leaves unsaid. Each
// combination is placed by the planner; of those that fit, the least
// predicted step wins (offload's copies are in the prediction:
// core/plan/cost_model.h analytical_offload_seconds). Recomputation is
// the job plan's choice (recompute_plan.h), made after placement.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "core/placement/planner.h"

namespace devmap {

struct LeverChoice {
  Config config;       // the config as it runs: parts and offload written in
  PlacementPlan plan;  // its placement
  // What it uses and why, a line each: "split fc1 as `split: {cpu:0: 0.5,
  // cpu:1: 0.5}` (shares by ...): fc1 alone needs 36.77 MiB, more than any
  // device's memory_limit".
  std::vector<std::string> used;
  // The other combinations tried, each with why it lost: "offload
  // parameters on cpu:0 and cpu:1: does not fit (...)", "...: 120.4 ms a
  // step predicted, against 90.1 ms".
  std::vector<std::string> not_taken;
};

// Places a variant of the config (the planner's result; no lever of its
// own). It may add to the variant's graph what placing needs (a
// prediction's argmax).
using PlaceVariant = std::function<PlacementResult(Config&)>;

// The levers for `config`, whose placement found `no_fit`. `flops_per_s`:
// each device's speed, for the split's shares. Throws devmap::Error
// (kInvalidInput, exit 2) when no combination fits, with the config's own
// account, what each combination lacked, and the smallest change that
// fits among them (a limit to raise, or an `offload: none` to drop).
LeverChoice choose_levers(const Config& config, const NoFit& no_fit, const std::map<std::string, double>& flops_per_s,
                          const PlaceVariant& place);

}  // namespace devmap
