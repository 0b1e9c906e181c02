// `coordinator calibrate CONFIG`: measures on this machine the costs that
// step-time predictions use (core/plan/step_time.h; `train.pipeline.micro_batches:
// auto`, and the planner) and keeps them in the calibration cache
// (coordinator/plan/calibration_cache.h):
//  - every op of the model, forward and backward, on every declared device
//    whose worker can run here, at each batch size asked for: the whole
//    model placed on that device alone with its memory_limit lifted
//    (calibration measures speed, not fit), `warmup` + `repeats` lock-step
//    training steps in the real worker process with the device's threads,
//    each step about the largest batch's samples as micro-batches of the
//    batch size measured (as a micro-batched step runs them: back to back
//    between two weight updates), in 3 rounds over the batch sizes; an
//    op's time is the median over every measured step of its slices in
//    the step divided by the step's micro-batches;
//  - the optimizer update per parameter on each device (the same steps),
//    and what a step costs besides its ops and update (the coordinator's
//    step time less the worker's ops and update);
//  - with two or more CPU devices, how much they slow each other down
//    while they compute at once (they share the host's cores, caches and
//    memory): the first one's model measured alone and while every other
//    trains its own copy, the median ratio of 3 rounds
//    (ScheduleRequest::contention);
//  - handoffs between two CPU processes through a slot ring, fitted as
//    latency + bytes / bandwidth from 4 KiB and 4 MiB tensors.
// What the cache already holds for this machine and build is kept unless
// `force`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"

namespace devmap {

struct CalibrateOptions {
  std::vector<int64_t> batches;  // empty: calibration_batches(config)
  int warmup = 2;
  int repeats = 5;
  bool force = false;
};

// The micro-batch sizes `auto` considers for a training step of
// train.batch_size (the sizes of micro_batch_candidates' counts).
std::vector<int64_t> calibration_batches(const Config& config);

// Measures what the cache lacks (everything with `force`) and saves it to
// the cache. Progress goes to `log`; returns the number of entries written.
int64_t calibrate(const Config& config, const RunOptions& options, const CalibrateOptions& calibrate,
                  const std::string& cache_path, std::ostream& log);

// The subcommand: calibrate, then print the cache's path and what it holds
// for the config. Returns the exit code.
int run_calibrate(const Config& config, const RunOptions& options, const CalibrateOptions& calibrate);

}  // namespace devmap
