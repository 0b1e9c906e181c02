// The memory curve: the step time the plan predicts for a range of memory
// limits of one device (the one with the tightest memory_limit, else the
// one whose plan is largest), from the limit at
// which today's plan needs nothing more down to the smallest limit any plan
// fits; each point is a whole plan (JobPlan) with the levers it has (today:
// micro-batches), predicted by the calibration (predict_run_step).
// `coordinator plan CONFIG --memory-curve FILE.svg` writes the picture and
// FILE.csv the numbers, today's plan marked in both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/job_plan.h"

namespace devmap {

struct MemoryCurvePoint {
  uint64_t limit = 0;    // the device's memory_limit at this point (0: none)
  uint64_t planned = 0;  // the device's planned bytes
  int64_t micro_batches = 1;
  double step_seconds = 0;  // predicted
  bool calibrated = false;  // every cost measured
};

struct MemoryCurve {
  std::string device;
  std::vector<MemoryCurvePoint> points;  // by limit, largest first
  size_t today = 0;                      // the point of the config's own limit
};

// The curve of that device of `plan`: today's point, then limits from
// its unconstrained plan down by steps of `step` (a share, 0 < step < 1)
// until no plan fits, at most `max_points` points.
MemoryCurve memory_curve(const Config& config, const RunOptions& options, const JobPlan& plan, const JobShape& shape,
                         double step = 0.85, int max_points = 40);

// limit_bytes,planned_bytes,micro_batches,predicted_step_ms,calibrated,today
std::string memory_curve_csv(const MemoryCurve& curve);
// The predicted step time against the memory limit, today's plan marked.
std::string memory_curve_svg(const MemoryCurve& curve, const std::string& title);

}  // namespace devmap
