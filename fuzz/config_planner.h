// The worker plans a coordinator would send for a loaded config, built the
// way coordinator/run/session.cpp builds them but without creating anything:
// shared by the config_plan fuzz target and the seed writer.
#pragma once

#include <vector>

#include "coordinator/config/config.h"
#include "core/exec/worker_plan.h"

namespace devmap::fuzz {

// Program, partition, memory plan (micro-batches), input/output layouts,
// cut edges and placement log of `config`'s job, then one WorkerPlan per
// device that runs an op. Throws devmap::Error where the coordinator would
// refuse the job.
std::vector<WorkerPlan> plan_workers(const Config& config);

}  // namespace devmap::fuzz
