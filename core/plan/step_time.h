// Predicted time of one pipelined training step (or inference round) from
// per-op and per-transfer costs: the segment costs of every device's
// program at the micro-batch size, simulated by the pipeline schedule
// (build_schedule's makespan), plus the slowest device's optimizer update.
// A pure function; the costs come from a calibration (measured in the
// worker processes) or from an analytical estimate.
//
// choose_micro_batches() is the rule behind `train.pipeline.micro_batches:
// auto`: among the candidate counts, the smallest whose predicted step time
// is within `tolerance` (5%) of the best count's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/plan/pipeline_schedule.h"

namespace devmap {

// `auto` considers at most this many micro-batches a step.
constexpr int kAutoMaxMicroBatches = 16;

struct OpSeconds {
  double forward = 0, backward = 0;
};

struct StepCosts {
  // Seconds of op `node`'s forward and backward on `device` for `batch`
  // samples.
  std::function<OpSeconds(int node, const std::string& device, int64_t batch)> op;
  // Seconds to hand `bytes` from one device to another (null: free).
  std::function<double(const std::string& from, const std::string& to, int64_t bytes)> transfer;
  // Seconds of a device's optimizer update per step (null: none).
  std::function<double(const std::string& device)> optimizer;
  // Devices that share the host's cores and memory slow each other down
  // while they compute at once (ScheduleRequest::contention); `contends`
  // says which devices do (null: none).
  double contention = 0;
  std::function<bool(const std::string& device)> contends;
  // Seconds a step costs on a device besides its ops and update (the STEP
  // round trip, reading the input, the loss); a step adds the largest
  // (null: none).
  std::function<double(const std::string& device)> step_overhead;
};

struct StepPrediction {
  double seconds = 0;        // the schedule's makespan, the slowest optimizer update and the largest step overhead
  std::vector<double> busy;  // per device (partition order): its segments and update
};

// A step of `batch` samples as `count` micro-batches (as even as
// split_evenly makes them; costs at the largest) under `kind`.
StepPrediction predict_step(const Partition& partition, bool training, PipelineKind kind, int64_t batch, int count,
                            const StepCosts& costs);

struct MicroBatchChoice {
  int count = 1;
  std::vector<std::pair<int, double>> predicted;  // (count, step seconds), in the candidates' order
};

// The smallest of `candidates` (ascending, each >= 1) whose predicted step
// time is within (1 + tolerance) of the best one's.
MicroBatchChoice choose_micro_batches(const Partition& partition, bool training, PipelineKind kind, int64_t batch,
                                      const std::vector<int>& candidates, const StepCosts& costs,
                                      double tolerance = 0.05);

// The counts `auto` considers for a step of `batch`: 1, 2, 3, 4, 6, 8, 12,
// 16 and beyond by doubling, up to min(batch, max_count), from
// `min_count` on (the memory budget's minimum, which is always included).
std::vector<int> micro_batch_candidates(int64_t batch, int min_count, int max_count);

}  // namespace devmap
