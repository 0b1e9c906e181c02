// StepTimeBound: a deliberately pessimistic bound on how long one
// (micro-)batch takes, from the plan alone: each device's FLOPs at a rate
// far below what its kernels reach (CPU: 1 GFLOP/s per thread, GPU: 50
// GFLOP/s). The hung-worker deadline scales it, so a large but healthy batch
// is never taken for a hang. It predicts nothing (step_costs.h does).
#pragma once

#include <cstdint>
#include <vector>

#include "coordinator/config/config.h"
#include "core/plan/partition.h"

namespace devmap {

constexpr double kAssumedCpuFlopsPerThread = 1e9;
constexpr double kAssumedGpuFlops = 50e9;
constexpr double kAssumedStepOverheadSeconds = 0.05;

class StepTimeBound {
 public:
  StepTimeBound(const Config& config, const Graph& graph, const Partition& partition);
  // The slowest device's bound for `batch` samples: forward and, when
  // training, backward of the ops placed on it.
  double seconds(int64_t batch, bool training) const;

 private:
  struct Device {
    double forward_flops = 0, backward_flops = 0;  // per sample
    double rate = 0;                               // assumed FLOP/s
  };
  std::vector<Device> devices_;
};

}  // namespace devmap
