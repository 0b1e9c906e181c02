// What one training, evaluation or prediction step returns to the
// coordinator, summed over the step's workers (and, across hosts, ranks).
#pragma once

#include <vector>

#include "transport/wire.h"

namespace devmap {

struct StepResult {
  float loss = 0;
  float metric = 0;
  double compute_seconds = 0;  // the slowest worker's
  std::vector<wire::ParamStat> param_stats;
  std::vector<wire::MicroResult> micro;  // a round's batches (evaluation, prediction)
};

}  // namespace devmap
