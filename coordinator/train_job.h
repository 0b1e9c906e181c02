// The train job: launches the workers of a config's device map, feeds them
// shuffled batches through shared memory, reports progress and metrics, and
// evaluates on the test set after every epoch.
#pragma once

#include "coordinator/config.h"
#include "coordinator/run_options.h"

namespace devmap {

// Runs training to the end; returns the process exit code. Throws
// devmap::Error for bad input or a failed worker (the caller prints it).
int run_train(const Config& config, const RunOptions& options);

}  // namespace devmap
