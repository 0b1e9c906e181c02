// The coordinator's command line: `devmap [SUBCOMMAND] CONFIG [options]`
// (help and messages name the command as run: coordinator/util/command_name.h).
// One table of options (cli.cpp) drives parsing, each subcommand's --help and
// the "did you mean" of an unknown option.
#pragma once

#include <string>
#include <vector>

#include "coordinator/config/run_options.h"
#include "coordinator/jobs/calibrate_job.h"
#include "coordinator/jobs/predict_job.h"

namespace devmap {

struct CommandLine {
  std::string subcommand;   // "train", "predict", "plan", "calibrate", "import", "export", or empty: the config's job
  std::string config_path;  // import: the ONNX model
  // predict.weights and predict.output are also export's --weights and
  // import's and export's --output.
  std::vector<std::string> overrides;  // --set values (and --checkpoint as train.checkpoint=), in order
  RunOptions run;
  PredictOptions predict;
  CalibrateOptions calibrate;
  bool json = false;                    // plan --json
  std::string dot_path, emit_map_path;  // plan --dot, --emit-map
  std::string memory_curve_path;        // plan --memory-curve
  bool help = false;
  bool version = false;
  bool worker_programs = false;  // --worker-programs
};

// Throws devmap::Error (kInvalidInput) with a message that ends in
// "(see --help)" or names the nearest option for anything it does not
// understand.
CommandLine parse_command_line(int argc, char** argv);
// The help of `subcommand` (empty: the whole command).
std::string usage_text(const std::string& subcommand = "");

}  // namespace devmap
