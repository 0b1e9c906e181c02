// What a worker derives from its PLAN before it allocates anything, shared
// by the fuzz targets that reach a decoded WorkerPlan.
#pragma once

#include "core/exec/worker_plan.h"

namespace devmap::fuzz {

// Builds the plan's program, partitions it and derives this device's cut
// edges, as worker/worker_service.cpp does. Throws devmap::Error for a plan
// the worker would refuse.
void replan_as_worker(const WorkerPlan& plan);

}  // namespace devmap::fuzz
