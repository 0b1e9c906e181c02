// The train job: launches the workers of a config's device map, feeds them
// shuffled batches through shared memory, reports progress and metrics, and
// evaluates on the test set after every epoch.
#pragma once

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/run/gradient_exchange.h"

namespace devmap {

class HostStages;

// This process's part of a job across hosts. A data-parallel job
// (data_parallel.replicas): replica 0 writes the run's outputs (metrics,
// checkpoints); the others train their share of each step and write
// nothing. `start_sum` sums a buffer over the replicas
// (GradientExchange::StartSum); unset with one. A job whose devices span
// hosts: `hosts` is this rank's part (host_stages.h), and rank 0 writes the
// outputs.
struct TrainReplica {
  int rank = 0, count = 1;
  GradientExchange::StartSum start_sum;
  const HostStages* hosts = nullptr;
  bool writes_outputs() const { return rank == 0; }
};

// Runs training to the end; returns the process exit code. Throws
// devmap::Error for bad input or a failed worker (the caller prints it).
int run_train(const Config& config, const RunOptions& options, const TrainReplica& replica = {});

}  // namespace devmap
