// `coordinator plan CONFIG`: the memory plan of the config's job (train or
// predict), per device and per op, with the cut edges; runs nothing.
#pragma once

#include <cstdint>

#include "coordinator/config.h"

namespace devmap {

struct PlanOptions {
  bool json = false;
  int64_t batch = 0;  // 0: the job's own (train.batch_size, or predict.batch / train.eval_batch_size)
};

int run_plan(const Config& config, const PlanOptions& options);

}  // namespace devmap
