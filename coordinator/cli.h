// The coordinator's command line: `coordinator [SUBCOMMAND] CONFIG [options]`.
#pragma once

#include <string>
#include <vector>

#include "coordinator/predict_job.h"
#include "coordinator/run_options.h"

namespace devmap {

struct CommandLine {
  std::string subcommand;  // "train", "predict", or empty: the config's job
  std::string config_path;
  std::vector<std::string> overrides;  // --set values, in order
  RunOptions run;
  PredictOptions predict;
  bool json = false;  // plan --json
  bool help = false;
  bool version = false;
};

// Throws devmap::Error (kInvalidInput) with a message that ends in
// "(see --help)" for anything it does not understand.
CommandLine parse_command_line(int argc, char** argv);
const char* usage_text();

}  // namespace devmap
