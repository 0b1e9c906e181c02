// `coordinator plan CONFIG`: the memory plan of the config's job (train or
// predict), per device and per op, with the cut edges; runs nothing.
#pragma once

#include <cstdint>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/auto_placement.h"

namespace devmap {

struct PlanOptions {
  bool json = false;
  int64_t batch = 0;                    // 0: the job's own (train.batch_size, or predict.batch / train.eval_batch_size)
  RunOptions run;                       // where the workers and the calibration cache are (micro_batches auto)
  std::string dot_path;                 // --dot FILE: the placement as a Graphviz picture (placement_dot.h)
  std::string emit_map_path;            // --emit-map FILE: the config with the placement as a device map
  const AutoPlan* auto_plan = nullptr;  // device_map `auto`: what the planner chose (auto_placement.h)
  // --memory-curve FILE (.svg, with the numbers in FILE's .csv beside it, or
  // .csv alone): the predicted step over memory limits (memory_curve.h).
  std::string memory_curve_path;
};

int run_plan(const Config& config, const PlanOptions& options);

}  // namespace devmap
