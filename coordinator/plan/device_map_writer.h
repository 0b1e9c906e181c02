// `coordinator plan --emit-map FILE`: the config with its placement written
// as an ordinary device map, a file to read, edit and launch as it is: the
// resolved config (overrides applied) whose device_map is replaced by
// `default` (the device with the most ops) and `place` naming every other
// op exactly, and no `device` on any op or group (the map alone places), and
// whose train.pipeline micro_batches and schedule are what the plan runs,
// with the levers `auto` chose written as keys (an op's `split`, a
// device's `offload`).
#pragma once

#include <string>

#include "coordinator/config/config.h"

namespace devmap {

struct EmittedMap {
  const Config* config = nullptr;
  const Graph* graph = nullptr;                 // placed
  int64_t micro_batches = 1;                    // what the plan runs
  PipelineKind schedule = PipelineKind::kNone;  // how it runs them (kNone: lock-step)
  std::string header;                           // comment lines (without "# "), e.g. where it came from
};

std::string config_with_device_map(const EmittedMap& map);

}  // namespace devmap
