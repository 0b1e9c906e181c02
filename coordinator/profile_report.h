// The --profile report: per worker, per op and direction, calls, total ms,
// share of the worker's time and GFLOP/s; as a table and as metrics lines.
#pragma once

#include <ostream>

#include "coordinator/metrics_log.h"
#include "coordinator/worker_group.h"

namespace devmap {

void report_profile(const std::vector<WorkerInfo>& workers, std::ostream& table, MetricsLog& metrics);

}  // namespace devmap
