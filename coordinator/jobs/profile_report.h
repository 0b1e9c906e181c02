// The --profile report: per worker, per op and direction, calls, total ms,
// share of the worker's time, GFLOP/s, the fraction of the worker's FP32
// peak (its measured per-core peak times its threads; CPU workers) and the
// kernel that ran; then each device's busy and idle
// time over the run's step time (DeviceBusy); as a table and as metrics
// lines ("profile" and "profile_busy").
#pragma once

#include <ostream>

#include "coordinator/run/worker_group.h"
#include "coordinator/telemetry/device_busy.h"
#include "coordinator/telemetry/metrics_log.h"

namespace devmap {

void report_profile(const std::vector<WorkerInfo>& workers, const DeviceBusy& busy, std::ostream& table,
                    MetricsLog& metrics);

}  // namespace devmap
