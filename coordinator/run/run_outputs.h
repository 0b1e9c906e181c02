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
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"

namespace devmap {

struct RunOutputs {
  std::string checkpoint;  // empty for jobs that save none
  std::string metrics;
  std::string config_copy;
};

RunOutputs resolve_run_outputs(const Config& config, const RunOptions& options, bool training);

// A file a run reads or writes, and what it is, for messages.
struct RunFile {
  std::string role;  // "weights", "--output", "metrics file", "train.checkpoint", ...
  std::string path;
};

// The files of a run, checked together before any work starts.
struct RunFiles {
  std::vector<RunFile> inputs;   // config, data, weights, --input
  std::vector<RunFile> outputs;  // every file the run writes (files of one role may be one file)
};

// Checks every output before a run starts: it is not a folder, it is not
// the same file (device and inode, hard links included, or the same path)
// as any input or an output of another role, it does not replace a file
// whose name says it holds what the output does not write (weights only
// from train.checkpoint, a config only from --emit-map or the resolved
// config; never a .tsv cache or data), and a file can be created in its
// folder (the nearest existing one: runs create missing folders). Throws
// devmap::Error (kInvalidInput) naming both files and their roles, or the
// folder and the system's reason.
void check_run_files(const RunFiles& files);

// What every job reads before it plans: the config file and the
// calibration cache (`plan` adds its --dot and --emit-map outputs).
RunFiles plan_files(const Config& config, const RunOptions& options);

// The files a run reads and writes besides its checkpoints: plan_files(),
// and the metrics file and resolved config of `outputs`.
RunFiles run_files(const Config& config, const RunOutputs& outputs, const RunOptions& options);

// "devmap: outputs: checkpoint ..., metrics ..., resolved config ..." on `log`.
void print_run_outputs(const RunOutputs& outputs, std::ostream& log);

}  // namespace devmap
