// `auto` in the device map: the ops whose device is kAutoDevice are placed
// by the placement planner (core/placement/planner.h) among every declared
// device, together with the micro-batches and the pipeline schedule of a
// step, to minimise its predicted time within every device's memory_limit.
// The costs are the calibration cache's (coordinator/plan/step_costs.h: op times
// measured on this machine by `coordinator calibrate`; handoffs between CPU
// workers), else the planner's analytical estimate, which the plan names.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "core/placement/planner.h"

namespace devmap {

// Whether any op's device is kAutoDevice.
bool has_auto_placement(const Config& config);

// What `auto` chose: the placement with its micro-batches and schedule,
// and the levers beyond them it pulled because nothing fit without
// (auto_levers.h), each with why, and the combinations it did not take.
struct AutoPlan {
  PlacementPlan plan;
  std::vector<std::string> levers;     // what beyond placement it uses, and why
  std::vector<std::string> not_taken;  // the other combinations tried, and why not
  bool levers_needed = false;          // nothing fit without levers (else they are for speed)
};

// Plans the placement of the auto ops and writes it into `config`: every
// op's device (placement_reason "auto"), train.micro_batches and
// train.pipeline, and the levers chosen (auto_levers.h): when nothing fits
// as written, an op split into parts, devices' offload, convs as GEMM;
// when it fits, a split for speed on devices of unequal speed, if it
// gains enough. `batch`: the job's samples per
// step (0: the config's). Returns nullopt when no op is auto. Throws
// devmap::Error (kInvalidInput, exit 2) when no placement fits with any
// lever, with the planner's account of what would.
std::optional<AutoPlan> place_automatically(Config& config, const RunOptions& options, int64_t batch = 0);

// The plan as `coordinator plan` prints it: the chosen placement, the
// predicted step, the levers, each device's busy and idle time and memory
// against its limit, the bytes crossing per step, what was estimated, and
// the runners-up with why they lost.
void print_auto_placement(const AutoPlan& plan, const Config& config, std::ostream& os);
std::string auto_placement_json(const AutoPlan& plan);

}  // namespace devmap
