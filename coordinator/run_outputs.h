// Where a run writes its outputs: the checkpoint (training), the metrics
// file and the resolved config beside it. One rule for every job, and for
// --resume, which looks for the checkpoint where training writes it:
//   checkpoint  train.checkpoint (the config, --set or --checkpoint), else
//               <--out-dir>/<config stem>.safetensors, else
//               checkpoints/<config stem>.safetensors
//   metrics     --metrics, else <--out-dir>/metrics.jsonl, else
//               runs/<config stem>/<YYYYmmdd-HHMMSS>-<pid>/metrics.jsonl
//   config      <metrics path without extension>.config.yaml
// Relative defaults are under the working directory.
#pragma once

#include <ostream>
#include <string>

#include "coordinator/config.h"
#include "coordinator/run_options.h"

namespace devmap {

struct RunOutputs {
  std::string checkpoint;  // empty for jobs that save none
  std::string metrics;
  std::string config_copy;
};

RunOutputs resolve_run_outputs(const Config& config, const RunOptions& options, bool training);

// "devmap: outputs: checkpoint ..., metrics ..., resolved config ..." on `log`.
void print_run_outputs(const RunOutputs& outputs, std::ostream& log);

}  // namespace devmap
