// Options of one coordinator run that come from the command line, not the
// config.
#pragma once

#include <cstdint>
#include <string>

namespace devmap {

struct RunOptions {
  std::string out_dir;       // where outputs go unless named one by one (run_outputs.h); empty: defaults
  std::string metrics_path;  // JSON lines, appended; empty: see run_outputs.h
  int64_t log_every = 100;   // a "step" metrics line every N steps
  // --log-every was given: off a terminal, a progress line every log_every
  // steps too (otherwise every tenth of an epoch).
  bool log_every_given = false;
  bool param_stats = false;  // log per-parameter gradient and update norms of step 1
  std::string worker_dir;    // where worker_cpu lives; empty: see find_worker_program
  bool log_placement = false;
  bool profile = false;  // time every op in the workers; print and log the table at the end
  // --trace FILE: the run's timeline as Chrome trace-event JSON
  // (coordinator/telemetry/trace_log.h); empty: none. --trace-steps A:B limits it.
  std::string trace_path;
  int64_t trace_first = 1, trace_last = 0;  // 1-based training steps; trace_last 0: to the end
  // The calibration cache (coordinator/plan/calibration_cache.h); empty:
  // default_calibration_path().
  std::string calibration_path;
  bool resume = false;  // train: continue from train.checkpoint and the training state beside it
  // This command line with --resume added (shell-quoted): what to run to
  // continue an interrupted run. It starts with DEVMAP_LAUNCH_AS when
  // scripts/launch.sh set it, else with the coordinator's own path.
  std::string resume_command;
};

}  // namespace devmap
