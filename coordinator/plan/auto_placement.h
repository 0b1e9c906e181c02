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

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "core/placement/planner.h"

namespace devmap {

// Whether any op's device is kAutoDevice.
bool has_auto_placement(const Config& config);

// Plans the placement of the auto ops and writes it into `config`: every
// op's device (placement_reason "auto"), train.micro_batches and
// train.pipeline. `batch`: the job's samples per step (0: the config's).
// Returns the planner's result (nullopt when no op is auto). Throws
// devmap::Error (kInvalidInput, exit 2) when no placement fits, with the
// planner's account of what would.
std::optional<PlacementPlan> place_automatically(Config& config, const RunOptions& options, int64_t batch = 0);

// The plan as `coordinator plan` prints it: the chosen placement, the
// predicted step, each device's busy and idle time and memory against its
// limit, the bytes crossing per step, what was estimated, and the
// runners-up with why they lost.
void print_auto_placement(const PlacementPlan& plan, const Config& config, std::ostream& os);
std::string auto_placement_json(const PlacementPlan& plan);

}  // namespace devmap
