// One short training run of an integration test: the coordinator trains
// `config` with `extra` options (and `env` set) in DIR/TAG, logging every
// step; the result holds the process, each step's loss (as written), the
// metrics file and the weights file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/metrics.h"
#include "tests/support/run_process.h"

namespace devmap::testing {

struct TrainRun {
  ProcessResult process;
  std::vector<std::string> losses;
  std::string metrics, weights;
};

inline TrainRun train_run(const std::string& dir, const std::string& tag, const std::string& config,
                          const std::vector<std::string>& extra, std::vector<std::string> env = {}) {
  const std::string sub = dir + "/" + tag;
  std::filesystem::create_directories(sub);
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN,
                                   "train",
                                   config,
                                   "--metrics",
                                   sub + "/m.jsonl",
                                   "--log-every",
                                   "1",
                                   "--set",
                                   "train.checkpoint=" + sub + "/w.safetensors"};
  args.insert(args.end(), extra.begin(), extra.end());
  TrainRun r;
  env.push_back("TMPDIR=" + sub);
  r.process = run_process(args, sub, env);
  r.metrics = read_file(sub + "/m.jsonl");
  r.weights = read_file(sub + "/w.safetensors");
  r.losses = step_losses_in(r.metrics);
  return r;
}

}  // namespace devmap::testing
