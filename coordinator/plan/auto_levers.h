// `auto` placement's levers beyond placement, micro-batches and pipelines,
// pulled when no placement fits the config as written: the op that needs
// the most memory split across devices (auto_split.h), offload of
// parameters to host memory (`offload: parameters`) on the CPU devices
// with a memory_limit whose `offload` the config leaves unsaid, both, and
// each of those again with the convs whose im2col + GEMM needs less
// workspace than oneDNN run so (conv_algorithm_lever.h). Each combination
// is placed by the planner, which chooses its micro-batches (any count up
// to 16, even or not) and schedule; of those that fit, the least predicted
// step wins (offload's copies are in the prediction: core/plan/cost_model.h
// analytical_offload_seconds). Recomputation is the job plan's choice
// (recompute_plan.h), made after placement against the micro-batches.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/plan/auto_split.h"
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

// The levers for `config`, whose placement found `no_fit`. `rates`: each
// device's speed and link, for the split's shares. Throws devmap::Error
// (kInvalidInput, exit 2) when no combination fits, with the config's own
// account, what each combination lacked, and the smallest change that
// fits among them (a limit to raise, or an `offload: none` to drop).
LeverChoice choose_levers(const Config& config, const NoFit& no_fit,
                          const std::map<std::string, SplitDeviceRate>& rates, const PlaceVariant& place);

// The least predicted gain for which a split is taken when the config fits
// without one: the FLOP estimate misjudges a split by more than the small
// gains (on two Zen 4 cores it predicted 20% that were not there).
constexpr double kSplitGain = 0.10;

// When `config` fits as written (its placement `unsplit`): the split
// split_for_speed proposes, placed, and taken when its predicted step is at
// least kSplitGain below unsplit's. nullopt when it proposes none; else the
// choice: the split (`used` says why) or the config as it was (`not_taken`
// says why not).
std::optional<LeverChoice> choose_split_for_speed(const Config& config, const PlacementPlan& unsplit,
                                                  const std::map<std::string, SplitDeviceRate>& rates,
                                                  const PlaceVariant& place);

}  // namespace devmap
